"""Issue 41, the adversary's fifth round: two answers Stripe gives that the check never gave a handler
calling Stripe's SDK itself, so two handlers written as teams write them were said to hold.

- `stripe_status_unread` books every PaymentIntent answered with HTTP 200 as paid. Confirmed on-session,
  a card that needs its holder answers 200 with status `requires_action`, and no money moves
  (https://docs.stripe.com/payments/paymentintents/lifecycle): booked as paid, the order is never paid.
- `stripe_429_returns` returns `{"statusCode": 429}` on Stripe's rate limit (https://docs.stripe.com/rate-limits).
  An S3-invoked function that returns has succeeded, and nothing retries it
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html): the order is lost.

The check now answers a charge sent with Stripe's SDK with a 429 and with a card that needs
authentication too (idem.sim.faults.SDK_POINTS). The handlers that charge off-session, as a function
with no customer present must, get the decline (402 authentication_required) and hold.
"""
from __future__ import annotations

import json

from check_cli import target
from test_check_adversary4 import check, verdicts

from idem.explore.families.build import schedules_for
from idem.sim.faults import CHARGE_CALL, END, SDK_POINTS, Boundary, Side


def _results(out: str) -> list[dict]:
    return json.loads(out)["results"]


def test_a_payment_booked_without_reading_its_status_breaks(monkeypatch):
    code, out, err = check(monkeypatch, target("stripe_status_unread"), "--json", families="faults")
    assert code == 1, (out + err)[-2000:]
    wrong = [r for r in _results(out) if r["verdict"] == "silent_mismatch"]
    assert wrong and all(r["schedule"].startswith("the provider answers needs_authentication") for r in wrong)
    assert all(r["effects"] == {"provider:charge": 0, "books:line": 1} for r in wrong)  # booked, not paid


def test_a_rate_limit_answered_as_success_breaks_as_a_silent_loss(monkeypatch):
    code, out, err = check(monkeypatch, target("stripe_429_returns"), "--json", families="faults")
    assert code == 1, (out + err)[-2000:]
    lost = [r["schedule"] for r in _results(out) if r["verdict"] == "silent_loss"]
    assert lost and all(s.startswith("the provider answers provider_429 before provider:charge") for s in lost)


def test_an_off_session_charge_that_reads_its_decline_holds_through_both_answers(monkeypatch):
    code, out, err = check(monkeypatch, target("stripe_direct_claimed"), families="faults")
    assert code == 0 and verdicts(out).get("declined"), (out + err)[-2000:]


def test_only_a_handler_calling_stripes_sdk_is_given_the_sdks_answers():
    charge = Boundary(CHARGE_CALL, 1, Side.BEFORE)
    crossed = [charge, Boundary(CHARGE_CALL, 1, Side.AFTER), END]
    outcomes = {s.fault.outcome for s in schedules_for(crossed, (0,), ("versioned",)) if s.fault}
    with_sdk = {s.fault.outcome for s in schedules_for(crossed, (0,), ("versioned",), sdk=True) if s.fault}
    assert not outcomes & set(SDK_POINTS) and set(SDK_POINTS) <= with_sdk
