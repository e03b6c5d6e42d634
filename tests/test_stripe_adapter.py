"""keyed over Stripe's own SDK (keyed_stripe.StripeProvider), against the loopback Stripe that
carries the stand-in's rules over HTTP: the same verdicts as the stand-in, errors mapped by
their HTTP status, long keys hashed, the SDK's retries on the same key, and the look-up past
the key window by search."""
from __future__ import annotations

import contextlib
import json
import re

import pytest
import stripe
import stripe._http_client

from idem.cli import main
from idem.core.clock import iso8601
from idem.core.handlers import keyed
from idem.core.handlers.keyed_stripe import MAX_KEY_CHARS, StripeProvider, stripe_key
from idem.core.ledger import booked_totals
from idem.cost import bench, bill
from idem.explore import scenarios as sc
from idem.explore.check import check_handler
from idem.explore.errors import CheckInputError
from idem.explore import schedules
from idem.sim.stripe.server import LoopbackStripe, intent_id, loopback_stripe
from idem.sim.world import LocalWorld
from idem.sim.faults import SDK_POINTS

DAY = 24 * 3600


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch):
    """The SDK sleeps 0.5 s or more between its retries, on the real clock: not here."""
    monkeypatch.setattr(stripe._http_client.HTTPClient, "_sleep_time_seconds", lambda self, n, response=None: 0.0)


@pytest.fixture
def world():
    with LocalWorld() as w:
        yield w


@pytest.fixture
def server(world):
    with loopback_stripe(world) as s:
        yield s


def charger(world):
    return keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                              now=world.clock.now, s3=world.s3)


def order_ref(world, upload):
    """The order an upload names (ORDER_IDENTITY's default, order-id): its key and reference."""
    return keyed.identify(upload, "order-id", world.s3)


def upload_of(obj, when):
    return keyed.Upload(obj.bucket, obj.key, obj.version_id, obj.etag, obj.sequencer, when)


def posts(server):
    return sum(1 for method, _ in server.requests if method == "POST")


# -- the scenario matrix: Stripe's SDK gives the stand-in's verdicts -------------------------------
@pytest.mark.parametrize("scenario", sc.all_scenarios(["keyed"], provider=True), ids=str)
def test_verdicts_over_stripes_sdk_equal_the_stand_ins(scenario):
    assert sc.run(scenario, over_stripe=True).row() == sc.run(scenario).row()


def test_exhaustive_schedules_over_stripes_sdk_equal_the_stand_ins():
    """Every tenth of keyed's exhaustive schedules (43 of 429: each fault point, kind of
    fault, delivery and retry count appears), run over Stripe's SDK and over the stand-in."""
    sample = schedules.all_schedules(["keyed"])[::10]
    assert len(sample) >= 40
    over_stripe, stand_in = schedules.run_schedules(sample, over_stripe=True), schedules.run_schedules(sample)
    assert [r.outcome.verdict for r in over_stripe] == [r.outcome.verdict for r in stand_in]
    # Everything else alike too, down to each attempt's result, but the ids: Stripe's are
    # PaymentIntents' (pi_000001), the stand-in's charges' (ch_000001).
    assert "ch_0" not in repr(over_stripe) and "pi_0" in repr(over_stripe)
    assert repr(over_stripe) == re.sub(r"\bch_(\d{6})\b", r"pi_\1", repr(stand_in))


# -- errors, by HTTP status -------------------------------------------------------------------------
@pytest.mark.parametrize("outcome, status, error", [
    ("declined", 402, stripe.CardError), ("provider_500", 500, stripe.APIError),
    ("provider_409", 409, stripe.APIError), ("provider_down", 503, stripe.APIError)])
def test_the_sdk_raises_stripes_error_with_its_status(world, server, outcome, status, error):
    with pytest.raises(error) as raised:
        world.provider().charge(customer="alice", amount=500, currency="usd", reference="s3://b/k",
                                idempotency_key=f"key-{outcome}", outcome=outcome)
    assert raised.value.http_status == status


def test_a_decline_is_final_and_recorded_for_good(world, server):
    obj = world.upload("alice/order.csv")
    server.outcome = "declined"
    assert charger(world).charge_once(upload_of(obj, world.clock.now()), 30_000)["status"] == "declined"
    server.outcome = "ok"
    before = posts(server)
    world.clock.advance(3 * DAY)  # a redrive three days later: past every TTL and key window
    again = charger(world).charge_once(upload_of(obj, world.clock.now() - 3 * DAY), 30_000)
    assert again["status"] == "declined"
    assert posts(server) == before and world.provider().charges() == []  # the card is not tried again


def test_a_saved_500_needs_attention_and_never_expires(world, server):
    obj = world.upload("alice/order.csv")
    server.outcome = "provider_500"
    with pytest.raises(keyed.NeedsAttention, match="answered 500"):
        charger(world).charge_once(upload_of(obj, world.clock.now()), 30_000)
    server.outcome = "ok"
    world.clock.advance(7 * DAY)
    with pytest.raises(keyed.NeedsAttention):
        charger(world).charge_once(upload_of(obj, world.clock.now() - 7 * DAY), 30_000)
    assert len(world.provider().charges()) == 1  # the 500 came after the money moved: once


def test_a_reused_key_with_other_parameters_needs_attention(world, server):
    obj = world.upload("alice/order.csv")
    upload = upload_of(obj, world.clock.now())
    world.provider().charge(customer=upload.account, amount=999, currency="usd",
                            reference=order_ref(world, upload).charge_reference,
                            idempotency_key=order_ref(world, upload).idempotency_key)  # a bug: the same key, another amount
    with pytest.raises(keyed.NeedsAttention, match="answered 400"):
        charger(world).charge_once(upload, 30_000)


@pytest.mark.parametrize("outcome", ["provider_409", "provider_down"])
def test_a_conflict_or_an_outage_releases_the_upload_for_lambdas_retry(world, server, outcome):
    obj = world.upload("alice/order.csv")
    server.outcome = outcome
    with pytest.raises(stripe.APIError):
        charger(world).charge_once(upload_of(obj, world.clock.now()), 30_000)
    server.outcome = "ok"
    assert charger(world).charge_once(upload_of(obj, world.clock.now()), 30_000)["status"] == "charged"


def test_a_lost_connection_is_released_too(world):
    dead = StripeProvider.from_secret("sk_test_x", api_base="http://127.0.0.1:9")  # nothing listens
    charge = keyed.KeyedCharger(world.dynamodb, dead, keyed.Settings(world.ledger_table), now=world.clock.now,
                                s3=world.s3)
    obj = world.upload("alice/order.csv")
    with pytest.raises(stripe.APIConnectionError) as raised:
        charge.charge_once(upload_of(obj, world.clock.now()), 30_000)
    assert raised.value.http_status is None
    record = world.ledger().get_record(order_ref(world, upload_of(obj, 0)).idempotency_key)
    assert record is not None and not (record.status is keyed.Status.IN_PROGRESS and record.lease_until > world.clock.now())


# -- keys, retries, search ---------------------------------------------------------------------------
def test_keys_longer_than_stripes_limit_are_hashed_and_still_replay(world, server):
    long_key = "charge#" + "x" * 400
    provider = world.provider()
    first = provider.charge(customer="a", amount=500, currency="usd", reference="r", idempotency_key=long_key)
    again = provider.charge(customer="a", amount=500, currency="usd", reference="r", idempotency_key=long_key)
    assert again.id == first.id and again.replayed
    stored = world.provider().charges()[0].idempotency_key
    assert stored == stripe_key(long_key) and len(stored) <= MAX_KEY_CHARS
    assert stripe_key("short") == "short"


def test_the_sdk_does_not_retry_inside_the_call_lambda_does_with_the_same_key(world, server):
    with pytest.raises(stripe.APIError):
        world.provider().charge(customer="a", amount=500, currency="usd", reference="r",
                                idempotency_key="k", outcome="provider_500")
    assert posts(server) == 1  # MAX_NETWORK_RETRIES = 0: the call stays within its time budget
    with pytest.raises(stripe.APIError):  # Lambda's retry: the same key, the saved 500 replayed
        world.provider().charge(customer="a", amount=500, currency="usd", reference="r", idempotency_key="k")
    assert len(world.provider().charges()) == 1


def test_past_the_key_window_the_charge_is_found_by_search(world, server):
    obj = world.upload("alice/order.csv")
    upload = upload_of(obj, world.clock.now())
    world.provider().charge(customer=upload.account, amount=500, currency="usd",
                            reference=order_ref(world, upload).charge_reference,
                            idempotency_key=order_ref(world, upload).idempotency_key)  # charged, then the function died
    world.clock.advance(DAY + 3600)  # the key is pruned; a redrive from the failure queue arrives
    result = charger(world).charge_once(upload, 30_000)
    assert result["status"] == "found"
    assert ("GET", "/v1/payment_intents/search") in server.requests
    assert len(world.provider().charges()) == 1


def test_two_uploads_of_one_name_unversioned_are_two_charges_each_booked_once(server):
    with LocalWorld(versioned=False) as world, loopback_stripe(world) as stripe_server:
        first = world.upload("alice/order.csv", b'{"order_id": "A-1", "amount_cents": 500}')
        assert charger(world).charge_once(upload_of(first, world.clock.now()), 30_000)["status"] == "charged"
        second = world.upload("alice/order.csv", b'{"order_id": "A-2", "amount_cents": 500}')  # another order
        assert first.version_id is None and first.etag != second.etag
        late = upload_of(second, world.clock.now())
        # The second's first attempt charged and died before its commit.
        world.provider().charge(customer=late.account, amount=500, currency="usd",
                                reference=order_ref(world, late).charge_reference,
                                idempotency_key=order_ref(world, late).idempotency_key)
        world.clock.advance(DAY + 3600)  # redriven after 25 h: the key is pruned, the claim expired
        result = charger(world).charge_once(late, 30_000)
        charges = world.provider().charges()
        assert result["status"] == "found" and len(charges) == 2
        assert result["charge_id"] == charges[1].id  # the second's own charge, not the first's
        assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (2, 1000)
        assert stripe_server.requests.count(("GET", "/v1/payment_intents/search")) == 1


def test_an_event_time_after_the_clock_is_looked_up_first(world, server):
    obj = world.upload("alice/order.csv")
    future = upload_of(obj, world.clock.now() + 3600)  # a clock skew, or a forged time
    assert charger(world).charge_once(future, 30_000)["status"] == "charged"
    assert ("GET", "/v1/payment_intents/search") in server.requests


def test_the_loopback_provider_is_stripes_sdk(world, server):
    provider = world.provider()
    assert isinstance(provider, LoopbackStripe) and isinstance(provider.adapter.client, stripe.StripeClient)
    assert iso8601(world.clock.now()).startswith("2026-01-01")


# -- a charge found past the key window at another amount is parked, never booked as the order -------
@pytest.mark.parametrize("over_stripe", [True, False], ids=["stripe", "stand-in"])
def test_a_charge_found_past_the_key_window_at_another_amount_is_parked_not_booked(over_stripe):
    """docs/money_contract.md, section 1: the look-up books a charge only on the order's own terms (it was
    booked at the 700 it took, under an order asking 500, until review round 4)."""
    with LocalWorld() as world, (loopback_stripe(world) if over_stripe else contextlib.nullcontext()):
        upload = upload_of(world.upload("alice/order.csv"), world.clock.now())
        # The first attempt charged 700 (the price then), and died before its commit.
        world.provider().charge(customer=upload.account, amount=700, currency="usd",
                                reference=order_ref(world, upload).charge_reference,
                                idempotency_key=order_ref(world, upload).idempotency_key)
        world.clock.advance(DAY + 3600)  # redriven a day later: the key is pruned, today's price is 500
        (charge,) = world.provider().charges()
        with pytest.raises(keyed.NeedsAttention, match=rf"{charge.id}, made with its key, charged 700 already \(usd"):
            charger(world).charge_once(upload, 30_000)
        assert len(world.provider().charges()) == 1
        assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (0, 0)


# -- ids are Stripe's: PaymentIntents start pi_ ------------------------------------------------------
def test_the_loopback_stripe_gives_payment_intent_ids_and_the_books_carry_them(world, server):
    obj = world.upload("alice/order.csv")
    result = charger(world).charge_once(upload_of(obj, world.clock.now()), 30_000)
    (charge,) = world.provider().charges()
    assert result["charge_id"] == charge.id == "pi_000001"  # https://docs.stripe.com/api/payment_intents/object
    assert intent_id("ch_000001") == "pi_000001"


# -- the command line: sim and check over Stripe's SDK -----------------------------------------------
def test_sim_over_stripe_gives_the_stand_ins_rows(capsys):
    assert main(["sim", "--handler", "keyed", "--all", "--json", "--provider", "stripe"]) == 0
    over_stripe = json.loads(capsys.readouterr().out)
    assert main(["sim", "--handler", "keyed", "--all", "--json"]) == 0
    assert over_stripe == json.loads(capsys.readouterr().out) and len(over_stripe) == 21


def test_sim_refuses_powertools_over_stripe(capsys):
    assert main(["sim", "--handler", "powertools", "--provider", "stripe"]) == 2
    assert "powertools charges through the stand-in only" in capsys.readouterr().err


def test_check_over_stripe_gives_the_stand_ins_verdicts():
    """keyed's whole check with no Lambda retry (the retried schedules are the same boundaries
    again; test_exhaustive_schedules above samples them over Stripe), schedule by schedule."""
    over_stripe = check_handler("keyed", retries=(0,), provider="stripe")
    stand_in = check_handler("keyed", retries=(0,))
    assert over_stripe.holds and stand_in.holds
    assert [str(b) for b in over_stripe.boundaries] == [str(b) for b in stand_in.boundaries]
    # Stripe's SDK is also answered 429 and with a card that needs its holder (SDK_POINTS): keyed
    # retries the first and records the second as declined; every other schedule is the stand-in's
    sdk_only = [r for r in over_stripe.results if r.schedule.fault and r.schedule.fault.outcome in SDK_POINTS]
    assert [(r.schedule.label(), r.verdict, r.effects) for r in over_stripe.results if r not in sdk_only] == \
           [(r.schedule.label(), r.verdict, r.effects) for r in stand_in.results]
    verdicts = {(r.schedule.fault.outcome, r.verdict) for r in sdk_only}
    assert ("needs_authentication", "declined") in verdicts and ("provider_429", "failed_visibly") in verdicts
    assert {v for _, v in verdicts} <= {"declined", "failed_visibly", "exactly_once", "needs_attention"}
    assert "provider: Stripe's SDK" in over_stripe.explain()
    with pytest.raises(CheckInputError, match="not one of stand-in, stripe"):
        check_handler("keyed", provider="paypal")


def test_the_bill_over_stripe_is_keyeds_and_bench_prints_both_rows():
    """DynamoDB bills the function's own requests: over Stripe's SDK they are keyed's, case by
    case (`idem bench` prints the two rows side by side, with their calls and rates)."""
    rows = [b.row() for b in bill.bills(("keyed", bill.OVER_STRIPE))]
    plain = [{k: v for k, v in r.items() if k != "handler"} for r in rows]
    assert [r["handler"] for r in rows] == ["keyed"] * 3 + ["keyed_stripe"] * 3 and plain[:3] == plain[3:]
    report = bench.measure(4, rounds=1, handlers=("keyed", "keyed_stripe"), check=False)  # the check's speed: test_bench
    assert {b["handler"] for b in report["bill"]} == {"keyed", "keyed_stripe"}
    assert "keyed_stripe" in bench.format_report(report)
