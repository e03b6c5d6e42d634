"""Who pays, how much, and how long a key protects an order (chapters 03, 06 and 12).

The handler to copy, keyed, runs through the local Lambda on moto and charges through Stripe's
own SDK, aimed at the loopback Stripe (idem.sim.stripe.server). Each account is onboarded as the
runbook does it: a Stripe customer with a saved card, linked to the account with
`idem.core.customers.link` (the code behind `idem customers link`). docs/money_contract.md states
the rules these runs show: who pays comes from that link, never from the file (property 2), and
once the key's first attempt is 23 h old the handler searches Stripe before charging (property 1).
"""
from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from ...core import customers
from ...core.handlers import keyed_settings
from ...explore import scenarios as sc
from ...sim.runtime import LocalLambda
from ...sim.stripe.keys import DAY, prune_idempotency_keys
from ...sim.stripe.server import decode_form, loopback_stripe, seed_customer
from ...sim.world import LocalWorld

HOUR = 3600
#: Who ran the runbook's `idem customers link` in these runs (STS GetCallerIdentity's ARN).
ONBOARDING = "arn:aws:sts::123456789012:assumed-role/ops/onboarding"
#: The accounts onboarded before any upload: each linked to `cus_<account>`.
LINKED = ("alice", "bob")


@dataclass(frozen=True)
class OrderFile:
    name: str  # the object's key: its first folder is the account
    says: dict[str, Any]  # the JSON the uploader wrote
    note: str  # what the upload tries


FILES = (
    OrderFile("alice/1001.json", {"order_id": "1001", "amount_cents": 1250}, "alice's order 1001"),
    OrderFile("bob/1001.json", {"order_id": "1001", "amount_cents": 900}, "bob's order, the same id"),
    OrderFile("bob/B-7.json", {"order_id": "B-7", "customer": "cus_alice", "amount_cents": 99999},
              "bob's file names alice as the payer"),
    OrderFile("carol/C-1.json", {"order_id": "C-1", "amount_cents": 1250}, "an account nobody linked"),
    OrderFile("alice/A-2.json", {"order_id": "A-2", "amount": 129900}, "a field the handler does not know"),
    OrderFile("alice/A-3.json", {"order_id": "A-3", "amount_cents": 250000}, "an amount above the limit"),
)


def onboard(world: LocalWorld, stripe: Any, account: str) -> str:
    """A Stripe customer with a saved default card, linked to `account` as the runbook links it."""
    customer, _ = seed_customer(stripe, customer_id=f"cus_{account}")
    customers.link(world.dynamodb, world.ledger_table, account, customer, reason="onboarding ticket",
                   caller=ONBOARDING, now=world.clock.now())
    return customer


@contextlib.contextmanager
def _stripe_world() -> Iterator[tuple[LocalWorld, Any]]:
    with LocalWorld(link_customers=False, prefix="money") as world, loopback_stripe(world) as stripe:
        yield world, stripe


@dataclass
class FileOutcome:
    upload: str
    the_file_says: str
    charged: str  # "cus_... 1250 cents", or "nothing"
    reason: str = ""  # why it was parked, as the failure queue holds it


def who_pays() -> list[FileOutcome]:
    """Every file of FILES uploaded once, each through the keyed handler (no retries: a parked
    order fails the same way on each), on moto and the loopback Stripe, with alice and bob linked."""
    with _stripe_world() as (world, stripe):
        for account in LINKED:
            onboard(world, stripe, account)
        runtime = LocalLambda(world, world.env("keyed"), retries=0)
        for file in FILES:
            runtime.send(world.event(world.upload(file.name, json.dumps(file.says).encode())))
        attempts = sorted(runtime.run(), key=lambda a: a.delivery)
        made = world.provider().charges()
        found = []
        for file, attempt in zip(FILES, attempts):
            charge = next((c for c in made if f"/{file.name}" in c.reference), None)
            found.append(FileOutcome(
                file.name, json.dumps(file.says),
                f"{charge.customer} {charge.amount} cents" if charge else "nothing",
                "" if attempt.outcome == "ok" else _reason(attempt.error)))
        return found


def _reason(error: str) -> str:
    """The handler's one-line reason, without the exception's name, the order's key, or an
    object's version id (a long random string that says nothing to the reader)."""
    reason = error.split(": ", 1)[-1]
    reason = re.sub(r"^[^ ]+#order#[^ :]+: ", "", reason)
    return re.sub(r"\?versionId=[^ ]+", "", reason)


def who_pays_rows(outcomes: list[FileOutcome]) -> list[dict[str, str]]:
    return [{"upload": o.upload, "the file says": o.the_file_says, "charged": o.charged,
             "parked": "yes" if o.reason else "no"} for o in outcomes]


def reasons(outcomes: list[FileOutcome]) -> str:
    return "\n".join(f"{o.upload}: {o.reason}" for o in outcomes if o.reason)


@dataclass
class Resent:
    resent_after_h: float  # when the same order is uploaded again, hours after its first attempt
    first_attempt_at_s: float  # the record's first_attempt_at before the re-send, in s from the start
    keys_stripe_pruned: int  # keys Stripe forgot before the re-send (it may, from 24 h on)
    searched_stripe: str  # did the handler search Stripe by the key before charging?
    charge_calls: int  # PaymentIntent creations the handler sent Stripe for the re-send
    handler_says: str  # the status the handler returned for the re-send
    payment_intents: int  # PaymentIntents for the order at Stripe afterwards
    record: str  # the order's record afterwards


def resent_later(hours: float) -> Resent:
    """Order A-1001 is charged, and every attempt dies right after Stripe's answer (a crash,
    three times: the first try and Lambda's two retries), so its record stays `in_progress` and
    the event reaches the failure queue. The same order is uploaded again `hours` after its first
    attempt. From 24 h on, Stripe prunes the key first, as it may."""
    body = json.dumps({"order_id": "A-1001", "amount_cents": 1250}).encode()
    with _stripe_world() as (world, stripe):
        onboard(world, stripe, "alice")
        crash = sc.fault_of(sc.Scenario("keyed", "after_charge", "always", how="crash"))
        dying = LocalLambda(world, world.env("keyed"), fault=crash)
        dying.send(world.event(world.upload("alice/A-1001.json", body)))
        dying.run()
        (claimed,) = world.ledger().records()
        first_attempt = claimed.first_attempt_at - (world.clock.now() - world.clock.t)
        world.clock.advance(hours * HOUR - world.clock.t)
        pruned = prune_idempotency_keys(stripe.account) if world.clock.t >= DAY else 0
        before = len(stripe.requests)
        again = LocalLambda(world, world.env("keyed"))
        again.send(world.event(world.upload("alice/A-1001.json", body)))
        (attempt,) = again.run()
        sent = stripe.requests[before:]
        searched = any(path.endswith("/search") for _, path in sent)
        creations = sum(1 for method, path in sent if method == "POST" and path == "/v1/payment_intents")
        said = attempt.result["processed"][0]["status"] if attempt.outcome == "ok" else attempt.error
        records = [r for r in world.ledger().records()]
        return Resent(hours, first_attempt, pruned, "yes" if searched else "no", creations, said,
                      len(world.provider().charges()),
                      ", ".join(r.status.value for r in records))


def key_age_rows(hours: tuple[float, ...] = (1, 22.5, 23.5, 25)) -> list[Resent]:
    return [resent_later(h) for h in hours]


def search_from_hours() -> float:
    """The key's age, in hours, from which the handler searches Stripe before charging: the
    provider's key window minus the margin (keyed_settings)."""
    window = keyed_settings.Settings("ledger").provider_key_retention_seconds
    return (window - keyed_settings.KEY_AGE_MARGIN_SECONDS) / HOUR


def payment_intent_request() -> list[dict[str, str]]:
    """What Stripe receives when keyed charges alice's order A-1001 (1250 cents) on its first
    attempt: the Idempotency-Key header, then each form parameter of the PaymentIntent it creates
    (`metadata[...]` one row each), as the loopback Stripe decoded them from Stripe's SDK."""
    body = json.dumps({"order_id": "A-1001", "amount_cents": 1250}).encode()
    with _stripe_world() as (world, stripe):
        onboard(world, stripe, "alice")
        sent: list[tuple[str, dict[str, Any]]] = []
        answer = stripe.answer

        def noting(method: str, target: str, text: str, headers: Any) -> Any:
            if method == "POST" and target.startswith("/v1/payment_intents"):
                sent.append((headers.get("Idempotency-Key") or "", dict(decode_form(text))))
            return answer(method, target, text, headers)

        stripe.answer = noting
        runtime = LocalLambda(world, world.env("keyed"))
        runtime.send(world.event(world.upload("alice/A-1001.json", body)))
        runtime.run()
    (key, params), = sent
    rows = [("Idempotency-Key (a header)", key)]
    for name, value in params.items():
        if isinstance(value, dict):
            rows += [(f"{name}[{inner}]", str(v)) for inner, v in value.items()]
        else:
            rows.append((name, str(value)))
    return [{"parameter": name, "value": _short(value), "comes from": COMES_FROM.get(name, "")}
            for name, value in rows]


def _short(value: str) -> str:
    """A key's hash is 64 hexadecimal digits: its first 8 name it well enough on a page."""
    return re.sub(r"([0-9a-f]{8})[0-9a-f]{56}", r"\1…", value)


#: Where keyed_stripe.StripeProvider.charge and keyed_orders.OrderRef.metadata take each value.
COMES_FROM = {
    "Idempotency-Key (a header)": "the order: its account and order id",
    "amount": "the file's amount_cents, within limits",
    "currency": "the file, or the one currency allowed",
    "confirm": "confirm at once, in this call",
    "off_session": "the customer is not there to confirm",
    "payment_method": "the customer's default, kept from attempt 1",
    "automatic_payment_methods[enabled]": "methods turned on in the Dashboard",
    "automatic_payment_methods[allow_redirects]": "no redirects: nobody is there to follow",
    "metadata[order_id]": "the file's order_id",
    "metadata[bucket]": "the upload's bucket",
    "metadata[key]": "the upload's object name",
    "metadata[idem_account]": "the account: the name's first folder",
    "metadata[account]": "the customer again, an older field name",
    "metadata[reference]": "the upload, for a person to read",
    "metadata[idempotency_key]": "the key again, for a search by key",
    "metadata[idem_stack]": "the deployment (empty in this local run)",
    "customer": "the customer mapping, never the file",
}


def key_age_table(rows: list[Resent]) -> list[dict[str, Any]]:
    """`key_age_rows` with column names a reader can take in."""
    return [{"re-sent after (h)": r.resent_after_h, "first_attempt_at (s)": r.first_attempt_at_s,
             "keys Stripe pruned": r.keys_stripe_pruned, "searched Stripe": r.searched_stripe,
             "charge calls": r.charge_calls, "keyed says": r.handler_says,
             "PaymentIntents": r.payment_intents, "record": r.record} for r in rows]
