"""The adversary's eighth round, payments: handlers calling Stripe's SDK directly, over the check's
loopback Stripe (each handler's docstring gives the published fact).

- Who pays was read from the metadata's `account` before the PaymentIntent's `customer`, so a handler
  noting its account in the metadata was never judged on who pays (cached_customer: said holds).
- `capture_method=manual` was ignored (manual_hold: its clean run failed; manual_capture_swallow: holds).
- Search answered at once (search_before_charge: holds); Stripe's search is not read-after-write.
- A separate confirm is not served: the exit-2 message now names the request (create_then_confirm)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from check_cli import cli, target

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text())


def test_the_customer_charged_is_the_customer_parameter_not_the_metadata_account():
    from idem.sim.stripe.params import _stand_in_request

    params = {"amount": "1250", "currency": "usd", "customer": "cus_alice",
              "metadata": {"account": "bob", "order_id": "7"}}
    assert _stand_in_request("test", params, "k")["customer"] == "cus_alice"
    # a request naming no customer (the workbook's adapter, a payer that is no Stripe customer)
    del params["customer"]
    assert _stand_in_request("test", params, "k")["customer"] == "bob"


def test_a_customer_kept_in_a_module_global_charges_another_accounts_order_to_it(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "accounts")
    code, out, _ = cli(target("cached_customer"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1
    assert "double_charge" in {r["verdict"] for r in report["results"]}


def test_a_manual_capture_intent_waits_in_requires_capture_until_captured_once():
    import stripe

    from idem.sim.stripe.server import NoRealSleep, loopback_stripe
    from idem.sim.world import LocalWorld

    with LocalWorld(provider_in_memory=True) as world, loopback_stripe(world) as server:
        client = stripe.StripeClient("sk_test_loopback", base_addresses={"api": server.url}, max_network_retries=0,
                                     http_client=NoRealSleep(timeout=(2.0, 8.0)))
        intent = client.v1.payment_intents.create(params={
            "amount": 1250, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True,
            "off_session": True, "capture_method": "manual"}, options={"idempotency_key": "k1"})
        assert (intent.status, intent.amount_capturable, intent.amount_received) == ("requires_capture", 1250, 0)
        captured = client.v1.payment_intents.capture(intent.id, options={"idempotency_key": "c1"})
        assert (captured.status, captured.amount_received, captured.amount_capturable) == ("succeeded", 1250, 0)
        again = client.v1.payment_intents.capture(intent.id, options={"idempotency_key": "c1"})  # replayed
        assert again.status == "succeeded" and server.account.replayed["c1"]
        with pytest.raises(stripe.InvalidRequestError) as refused:  # a new key: nothing left to capture
            client.v1.payment_intents.capture(intent.id, options={"idempotency_key": "c2"})
        assert refused.value.code == "payment_intent_unexpected_state"


def test_an_uncaptured_hold_kept_no_money_unless_the_clean_runs_charges_were_holds():
    from types import SimpleNamespace

    from idem.explore.run.runner import kept_charges

    intents = [{"id": "pi_000001", "status": "requires_capture", "capture_method": "manual", "amount": 1250,
                "amount_received": 0},
               {"id": "pi_000002", "status": "succeeded", "capture_method": "manual", "amount": 1250,
                "amount_received": 1000}]
    server = SimpleNamespace(account=SimpleNamespace(modes={"test": None}, refunds=lambda mode: [],
                                                     intents=lambda mode: intents))
    made = [(f"memory:charge#ch_00000{n}", {"pk": f"charge#ch_00000{n}", "amount": 1250}) for n in (1, 2)]
    assert [(w[-9:], i["amount"]) for w, i in kept_charges(made, server, holds=False)] == [("ch_000002", 1000)]
    assert [(w[-9:], i["amount"]) for w, i in kept_charges(made, server, holds=True)] == [
        ("ch_000001", 1250), ("ch_000002", 1000)]


@pytest.mark.parametrize("name, families, retries, code", [
    ("manual_hold", "faults", "0", 0),  # a hold per order, booked as held
    ("manual_capture_swallow", "faults", "1", 1),  # a retry finds its line booked and never captures
])
def test_a_hold_is_the_charge_only_where_the_clean_run_held(monkeypatch, name, families, retries, code):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    got, out, _ = cli(target(name), "--retries", retries, "--workers", "1", "--json")
    assert got == code, out[-2000:]
    if code:
        assert any("a ledger line with no charge" in f for r in json.loads(out)["results"] for f in r["findings"])


def test_a_search_before_a_fresh_key_charges_twice_when_search_lags(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, _ = cli(target("search_before_charge"), "--retries", "1", "--workers", "1", "--json")
    assert code == 1
    assert "double_charge" in {r["verdict"] for r in json.loads(out)["results"]}


def test_a_separate_confirm_is_refused_naming_the_request():
    code, _, err = cli(target("create_then_confirm"), "--retries", "0", "--workers", "1")
    assert code == 2
    assert "POST: /v1/payment_intents/pi_unpaid000001/confirm is not served" in err
    assert "Charges API and others" not in err


@pytest.mark.parametrize("name, code", [("list_fail_open", 1), ("list_fails_closed", 0)])
def test_a_stripe_read_that_fails_is_failed_by_the_check_and_a_handler_charging_anyway_breaks(monkeypatch, name, code):
    """list_fail_open takes a failed list of PaymentIntents for "not charged" and charges again under a
    fresh key (held before: Stripe's reads were never failed); its twin lets the error raise and holds."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    got, out, _ = cli(target(name), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert got == code, out[-2000:]
    assert "before stripe:ListPaymentIntents" in report["boundaries"]
    broken = [r for r in report["results"] if r["verdict"] == "double_charge"]
    assert bool(broken) == bool(code)
    assert all("stripe:ListPaymentIntents" in r["schedule"] for r in broken)


def test_the_name_of_a_stripe_read_is_the_call_stripes_reference_names():
    from idem.explore.sandbox.stripe_sdk import read_call

    assert read_call("/v1/payment_intents") == "stripe:ListPaymentIntents"
    assert read_call("/v1/payment_intents/search") == "stripe:SearchPaymentIntents"
    assert read_call("/v1/payment_intents/pi_123") == "stripe:RetrievePaymentIntent"
    assert read_call("/v1/customers/cus_123") == "stripe:RetrieveCustomer"
    assert read_call("/v1/customers/cus_123/payment_methods") == "stripe:ListCustomerPaymentMethods"


def test_a_list_made_only_on_a_retry_that_fails_open_breaks_in_the_second_round(monkeypatch):
    """list_on_retry_fail_open charges twice when an attempt fails after its charge and the retry's list
    fails too: two faults in one schedule, the second at a read its clean run never made. The first round
    alone (a fault at one call the clean run made) said holds; the family second_fault fails the read too."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, _ = cli(target("list_on_retry_fail_open"), "--retries", "1", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 0, out[-2000:]  # the first round alone
    assert not any(b.startswith("before stripe:") for b in report["boundaries"])  # the clean run never lists
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults,second_fault")
    code, out, _ = cli(target("list_on_retry_fail_open"), "--retries", "1", "--workers", "1", "--json")
    broken = [r for r in json.loads(out)["results"] if r["verdict"] == "double_charge"]
    assert code == 1 and broken, out[-2000:]
    assert all(", then exception before stripe:ListPaymentIntents on its first arrival" in r["schedule"]
               for r in broken)


THROTTLED, LOST = ", then exception before dynamodb:UpdateItem", ", then exception after dynamodb:UpdateItem"


@pytest.mark.parametrize("name, breaks_at", [("takeover_fail_open", {THROTTLED, LOST}), ("takeover_fails_closed", {LOST}),
                                             ("takeover_own_token", set())])
def test_an_aws_call_made_only_on_a_retry_is_failed_in_the_second_round_and_a_handler_failing_open_breaks(
        monkeypatch, name, breaks_at):
    """A retry takes over an earlier attempt's claim (an UpdateItem its clean run never makes). takeover_fail_open
    reads any error of it as "another attempt took the order over" and returns success; takeover_fails_closed
    raises a throttle, but reads the ConditionalCheckFailed of botocore's resend of its own takeover (its answer
    lost) as another's. Either way the order is never charged, or never booked. The first round alone said
    holds for all three; the second fails the takeover too, throttled and with its answer lost.
    takeover_own_token tells its own takeover by a token and holds."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    first, out, _ = cli(target(name), "--retries", "1", "--workers", "1", "--json")
    assert first == 0, out[-2000:]  # the first round alone: all hold
    assert "before dynamodb:UpdateItem" not in json.loads(out)["boundaries"]  # the clean run takes nothing over
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults,second_fault")
    got, out, _ = cli(target(name), "--retries", "1", "--workers", "1", "--json")
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)  # the family second_fault is a documented member of `dimensions`
    assert report["dimensions"]["second_fault"] > 0
    results = report["results"]
    broken = {r["schedule"] for r in results if r["verdict"] not in ("exactly_once", "needs_attention", "failed_visibly",
                                                                       "declined")}
    assert got == (1 if breaks_at else 0), out[-2000:]
    # unpaid (the earlier attempt stopped before charging), or paid and never booked (it charged, then stopped)
    assert {r["verdict"] for r in results if r["schedule"] in broken} <= {"silent_loss", "silent_mismatch"}
    assert {second for second in (THROTTLED, LOST) if any(second in s for s in broken)} == breaks_at
    assert all(any(second in r["schedule"] for r in results) for second in (THROTTLED, LOST))  # both tried on each


def test_the_second_round_fails_only_calls_the_clean_run_never_made():
    from types import SimpleNamespace

    from idem.explore.families import second_fault
    from idem.explore.families.schedule import Schedule
    from idem.sim.faults import Boundary, FaultPlan, Side

    charged, listed = Boundary("provider:charge", 1, Side.AFTER), Boundary("stripe:ListPaymentIntents", 1, Side.BEFORE)
    put, answered = Boundary("dynamodb:UpdateItem", 1, Side.BEFORE), Boundary("dynamodb:UpdateItem", 1, Side.AFTER)
    end = Boundary("end", 1, Side.AFTER)
    faulted = Schedule(FaultPlan(charged, "1"), retries=1)
    results = [SimpleNamespace(schedule=Schedule(None), reached={listed: 1}),  # no first fault: its deliveries led there
               SimpleNamespace(schedule=faulted, reached={charged: 1, listed: 1, put: 1, answered: 1, end: 1}),
               SimpleNamespace(schedule=faulted, reached={charged: 1, listed: 1})]  # the same way: once
    again = second_fault.schedules(results, crossed=[charged])
    # a read of Stripe's, before it; an AWS call, before it and after it (its answer lost); never the return
    assert [(s.fault.at, s.fault.also) for s in again] == [(None, FaultPlan(listed, "1")), (charged, FaultPlan(listed, "1")),
                                                           (charged, FaultPlan(put, "1")), (charged, FaultPlan(answered, "1"))]
    assert {s.dimension for s in again} == {"second_fault"}
    assert "a call the clean run never made" in again[0].label()
    assert second_fault.schedules(results, crossed=[charged, listed, put, answered]) == []  # the clean run made all
    # at a boundary the clean run crossed, a request that asks what none of the clean run's asked (a park where
    # the clean run kept a payment method): failed, pinned to its role; the clean run's own role is not
    roles = frozenset({(put, "ledger; SET payment_method = :m")})
    parked = SimpleNamespace(schedule=faulted, reached={put: 1}, roles=frozenset(
        {(put, "ledger; SET payment_method = :m"), (put, "ledger; SET #s = :s, reason = :r")}))
    (pinned,) = second_fault.schedules([parked], crossed=[charged, put], roles=roles)
    assert pinned.fault.also == FaultPlan(put, "1", role="ledger; SET #s = :s, reason = :r")
    assert "(ledger; SET #s = :s, reason = :r)" in pinned.label()
    # the clean run's role at another number (a batch's second order's claim) is the clean run's
    other = SimpleNamespace(schedule=faulted, reached={put: 1}, roles=frozenset({(put, "ledger; SET payment_method = :m")}))
    assert second_fault.schedules([other], crossed=[charged, put],
                                  roles=frozenset({(Boundary(put.call, 2, put.side), "ledger; SET payment_method = :m")})) == []
    after_charge = Boundary("provider:charge", 2, Side.AFTER)  # a charge's answer: not an AWS call's
    assert second_fault.schedules([SimpleNamespace(schedule=faulted, reached={after_charge: 1})], crossed=[]) == []


def test_every_schedule_of_the_second_round_fails_its_second_call(monkeypatch):
    """The property of the family second_fault, run as the check runs it: the second call fails where its
    schedule says, on its first arrival, in every family, the redrive of `again` included (its first fault
    an outage that is over by then: FaultPlan.over). Before, `again`'s second faults ended with the outage:
    18 of keyed's schedules here ran as their first-round twins under a second fault's name (on SQS, the
    mutant of tests/test_check_mutants.py pins the dead-letter queue's redrive)."""
    from idem.explore.check import check_handler
    from idem.explore.families import family_choice

    monkeypatch.setenv(family_choice.VARIABLE, "faults,again,second_fault")
    report = check_handler("idem.core.handlers.keyed:lambda_handler", retries=(0,), workers=1)
    second = [r for r in report.results if r.schedule.dimension == "second_fault"]
    assert any(r.schedule.later is not None for r in second)  # `again`'s redrives are among them
    for r in second:
        at = r.schedule.fault.also.at
        marks = [c.failed for a in r.attempts for c in a.crossings if c.boundary == at]
        assert marks and marks[0], (r.schedule.label(), marks)  # struck at its first crossing


def test_a_charge_refused_as_invalid_and_only_logged_is_a_silent_loss_not_an_exit_2(monkeypatch, tmp_path):
    """refusal_logged logs Stripe's 400 (here amount_too_small: an order file of 30 cents) and returns
    success: the order is lost and nothing tells a person. Before, the check's clean run made no charge and
    it exited 2, as if it could not judge the handler."""
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"order_id": "small-1", "amount_cents": 30, "currency": "usd"}))
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    code, out, _ = cli(target("refusal_logged"), "--object", f"{small}=acct-1/small.json", "--retries", "0",
                       "--workers", "1", "--json")
    assert code == 1, out[-2000:]
    (result,) = [r for r in json.loads(out)["results"] if r["verdict"] == "silent_loss"]
    assert any("refused by the provider (400 amount_too_small" in f for f in result["findings"])
