"""The handler to copy with real money (docs/money_contract.md): who pays and how much from a
source the uploader cannot write, one charge per (account, order) over the order's whole life,
Stripe's answers read by their meaning. On moto and the loopback Stripe (Stripe's own SDK over
HTTP), each test named for the property it pins."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
import stripe._http_client
from botocore.exceptions import ClientError

from idem.core import customers
from idem.core.handlers import keyed
from idem.sim.stripe.server import loopback_stripe, seed_customer
from idem.sim.world import LocalWorld

HOUR = 3600


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch):
    monkeypatch.setattr(stripe._http_client.HTTPClient, "_sleep_time_seconds", lambda self, n, response=None: 0.0)


@pytest.fixture
def world():
    with LocalWorld(link_customers=False) as w, loopback_stripe(w) as server:
        w.stripe = server
        yield w


def link(world: Any, account: str) -> str:
    """A Stripe customer with a saved card, linked to the account as the runbook does."""
    customer, _ = seed_customer(world.stripe, customer_id=f"cus_{account}")
    customers.link(world.dynamodb, world.ledger_table, account, customer, reason="onboarding ticket T-1",
                   caller="arn:aws:sts::123456789012:assumed-role/ops/test", now=world.clock.now())
    return customer


def order(order_id: str, **more: object) -> bytes:
    return json.dumps({"order_id": order_id, **more}).encode()


def charger(world: Any, **settings: Any) -> keyed.KeyedCharger:
    return keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table, **settings),
                              now=world.clock.now, s3=world.s3)


def charge(world: Any, obj: Any, **settings: Any) -> dict[str, Any]:
    return charger(world, **settings).charge_once(keyed.Upload.of(obj), 30_000)


def record_of(world: Any) -> keyed.Record:
    (record,) = [r for r in world.ledger().records()]
    return record


# -- (a) the key's age: one charge over the order's whole life --------------------------------------
def test_a_second_charge_a_day_later_is_found_not_made_again(world):
    """Charged, the commit refused on every try (the record stays in_progress, the event goes
    to the failure queue); the same order re-sent 25 h later, after Stripe may prune the key:
    the handler searches Stripe by the key before any charge, finds the charge, books it."""
    link(world, "alice")
    first = world.upload("alice/A-1001.json", order("A-1001", amount_cents=1250))
    broken = charger(world)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "PutItem")

    broken.ledger.commit = refused  # type: ignore[method-assign]
    for _ in range(3):  # Lambda's two retries, then the failure queue
        with pytest.raises(ClientError):
            broken.charge_once(keyed.Upload.of(first), 30_000)
        world.clock.advance(60)
    (made,) = world.provider().charges()
    assert record_of(world).status is keyed.Status.IN_PROGRESS
    world.clock.advance(25 * HOUR)
    again = world.upload("alice/A-1001.json", order("A-1001", amount_cents=1250))
    result = charge(world, again)
    assert len(world.provider().charges()) == 1, "a second PaymentIntent for one order"
    assert result["charge_id"] == made.id
    assert record_of(world).status is keyed.Status.DONE


def test_an_in_progress_record_is_kept_past_its_ttl_with_its_first_attempt(world):
    link(world, "alice")
    obj = world.upload("alice/A-1.json", order("A-1", amount_cents=1250))
    broken = charger(world)
    broken.ledger.commit = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("lost"))  # type: ignore[method-assign]
    started = world.clock.now()
    with pytest.raises(RuntimeError):
        broken.charge_once(keyed.Upload.of(obj), 30_000)
    item = world.dynamodb.get_item(TableName=world.ledger_table,
                                   Key={"pk": {"S": record_of(world).key}})["Item"]
    assert "expires_at" not in item  # DynamoDB's TTL never deletes a claim that may have charged
    assert float(item["first_attempt_at"]["N"]) == started


def test_a_look_up_that_fails_past_the_key_window_parks_never_charges_blind(world):
    link(world, "alice")
    obj = world.upload("alice/A-2.json", order("A-2", amount_cents=1250))
    broken = charger(world)
    broken.ledger.commit = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("lost"))  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        broken.charge_once(keyed.Upload.of(obj), 30_000)
    world.clock.advance(30 * HOUR)
    world.stripe.inject("unavailable", method="GET", path="/v1/payment_intents/search")
    with pytest.raises(keyed.NeedsAttention, match="look-up failed"):
        charge(world, world.upload("alice/A-2.json", order("A-2", amount_cents=1250)))
    assert len(world.provider().charges()) == 1


# -- (b) who pays: the account's linked customer, never the file -----------------------------------
def test_a_file_naming_another_customer_and_amount_is_parked_alice_not_charged(world):
    link(world, "alice")
    link(world, "bob")
    obj = world.upload("bob/order.json", order("B-1", customer="cus_alice", amount_cents=99999))
    with pytest.raises(keyed.NeedsAttention, match="cus_alice"):
        charge(world, obj)
    assert world.provider().charges() == []
    assert record_of(world).status is keyed.Status.NEEDS_ATTENTION


def test_an_account_with_no_linked_customer_is_parked(world):
    obj = world.upload("carol/order.json", order("C-1", amount_cents=1250))
    with pytest.raises(keyed.NeedsAttention, match="carol has no linked customer: run idem customers link"):
        charge(world, obj)
    assert world.provider().charges() == []


@pytest.mark.parametrize("body, says", [
    (order("A-1", amount_cents=100_001), "above MAX_AMOUNT_CENTS"),
    (order("A-1", amount_cents=49), "below MIN_AMOUNT_CENTS"),
    (order("A-1", amount_cents=1250, currency="eur"), "not in CURRENCIES"),
])
def test_an_amount_outside_the_limits_or_a_currency_off_the_list_is_parked(world, body, says):
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match=says):
        charge(world, world.upload("alice/order.json", body))
    assert world.provider().charges() == []


# -- (c) the key belongs to the account ----------------------------------------------------------
def test_two_accounts_orders_1001_are_two_charges_each_to_its_own_customer(world):
    alice, bob = link(world, "alice"), link(world, "bob")
    assert charge(world, world.upload("alice/1001.json", order("1001", amount_cents=1250)))["status"] == "charged"
    assert charge(world, world.upload("bob/1001.json", order("1001", amount_cents=700)))["status"] == "charged"
    made = world.provider().charges()
    assert sorted((c.customer, c.amount) for c in made) == [(alice, 1250), (bob, 700)]


@pytest.mark.parametrize("changed, says", [
    ({"amount_cents": 1300}, "asks 1300"),
    ({"currency": "eur"}, "eur"),
    ({"customer": "cus_mallory"}, "cus_mallory"),
])
def test_a_duplicate_with_another_amount_currency_or_customer_is_parked(world, changed, says):
    link(world, "alice")
    assert charge(world, world.upload("alice/1001.json", order("1001", amount_cents=1250, currency="usd")),
                  currencies=("usd", "eur"))["status"] == "charged"
    again = world.upload("alice/1001.json", order("1001", **{"amount_cents": 1250, "currency": "usd", **changed}))
    with pytest.raises(keyed.NeedsAttention, match=says):
        charge(world, again, currencies=("usd", "eur"))
    assert len(world.provider().charges()) == 1


def test_a_second_upload_of_a_charged_order_that_names_no_currency_where_several_are_allowed_is_refused(world):
    """Found by the money model (P4): the file cannot be charged as it stands (which currency?), so it
    is no duplicate of the order charged in usd: it is refused with its reason, and nothing is charged."""
    link(world, "alice")
    assert charge(world, world.upload("alice/1001.json", order("1001", amount_cents=1250, currency="usd")),
                  currencies=("usd", "eur"))["status"] == "charged"
    with pytest.raises(keyed.NeedsAttention, match="names no currency, and CURRENCIES allows several"):
        charge(world, world.upload("alice/1001.json", order("1001", amount_cents=1250)), currencies=("usd", "eur"))
    assert len(world.provider().charges()) == 1


# -- (d) the order file is strict: no default amount ----------------------------------------------
@pytest.mark.parametrize("body, says", [
    (order("A-1", amount=129900), "unknown field 'amount'"),
    (order("A-1"), "no amount_cents"),
    (order("A-1", amount_cents="1250"), "amount_cents"),
])
def test_an_unknown_amount_field_is_refused_never_charged_a_default(world, body, says):
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match=says):
        charge(world, world.upload("alice/order.json", body))
    assert world.provider().charges() == []
    assert record_of(world).status is keyed.Status.NEEDS_ATTENTION


def test_price_cents_is_gone_and_a_price_per_upload_is_required_where_no_file_is_read():
    assert not hasattr(keyed.Settings("t"), "price_cents")
    with pytest.raises(keyed.ConfigError, match="PRICE_PER_UPLOAD_CENTS"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "ORDER_IDENTITY": "object-name"})
    assert keyed.settings_from_env({"LEDGER_TABLE": "t", "ORDER_IDENTITY": "object-name",
                                    "PRICE_PER_UPLOAD_CENTS": "700"}).price_per_upload_cents == 700
    settings = keyed.settings_from_env({"LEDGER_TABLE": "t", "CURRENCIES": "usd,eur", "MIN_AMOUNT_CENTS": "100",
                                        "MAX_AMOUNT_CENTS": "5000"})
    assert (settings.currencies, settings.min_amount_cents, settings.max_amount_cents) == (("usd", "eur"), 100, 5000)


def test_with_two_currencies_an_order_must_name_one(world):
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="names no currency"):
        charge(world, world.upload("alice/order.json", order("A-1", amount_cents=1250)), currencies=("usd", "eur"))


# -- (e) (f) (g) answers by meaning ---------------------------------------------------------------
class Context:
    aws_request_id, function_name = "req-money-1", "charge"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def deployed(world, monkeypatch):
    """The handler as Lambda runs it: its secret in SSM (moto), Stripe's SDK aimed at the loopback."""
    ssm = world.session.client("ssm")
    ssm.put_parameter(Name="/idem/money-stripe", Value="sk_test_before_rotation", Type="SecureString", Overwrite=True)
    for name, value in {"LEDGER_TABLE": world.ledger_table, "STRIPE_SECRET_PARAMETER": "/idem/money-stripe",
                        "STRIPE_API_BASE": world.stripe.url, "STAGE": "dev"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(keyed, "_charger", None)
    yield ssm
    keyed._charger = None


def test_a_401_rereads_the_secret_and_fails_for_a_retry_never_parked(world, deployed, capsys):
    link(world, "alice")
    world.clock.advance_to(time.time())  # lambda_handler keeps real time: the event is a fresh one
    event = world.event(world.upload("alice/A-5.json", order("A-5", amount_cents=1250)))
    world.stripe.account.revoked = {"sk_test_before_rotation"}  # the key was rolled at Stripe
    with pytest.raises(keyed.ProviderAuthFailed):
        keyed.lambda_handler(event, Context())
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert metrics[-1]["auth_failed"] == 1 and metrics[-1]["needs_attention"] == 0
    assert record_of(world).status is keyed.Status.IN_PROGRESS  # released for the retry, not parked
    deployed.put_parameter(Name="/idem/money-stripe", Value="sk_test_after_rotation", Type="SecureString",
                           Overwrite=True)
    result = keyed.lambda_handler(event, Context())  # Lambda's retry: the secret is read again
    assert [p["status"] for p in result["processed"]] == ["charged"]
    assert len(world.provider().charges()) == 1


def test_a_500_on_reading_the_default_method_is_retried_not_parked(world):
    link(world, "alice")
    obj = world.upload("alice/A-6.json", order("A-6", amount_cents=1250))
    world.stripe.inject("api_error", method="GET", path="/v1/customers/")
    with pytest.raises(Exception) as raised:
        charge(world, obj)
    assert not isinstance(raised.value, keyed.NeedsAttention)
    assert record_of(world).status is keyed.Status.IN_PROGRESS
    assert charge(world, obj)["status"] == "charged"
    assert len(world.provider().charges()) == 1


def test_a_retry_after_the_default_card_changed_sends_the_same_payment_method(world):
    customer = link(world, "alice")
    obj = world.upload("alice/A-7.json", order("A-7", amount_cents=1250))
    world.stripe.inject("drop_after")  # charged, the answer lost
    with pytest.raises(Exception) as raised:
        charge(world, obj)
    assert not isinstance(raised.value, keyed.NeedsAttention)
    first_method = record_of(world).payment_method
    account = world.stripe.account
    newer = account.attach("test", "pm_card_mastercard", customer)
    account.modes["test"].customers[customer]["invoice_settings"]["default_payment_method"] = newer["id"]
    result = charge(world, obj)
    assert result["status"] == "charged"
    (made,) = world.provider().charges()
    assert result["charge_id"] == made.id and record_of(world).payment_method == first_method


# -- a record a person released (idem settle) ------------------------------------------------------
def test_a_record_a_person_released_is_taken_over_and_charged_once(world):
    """`idem settle` releases an order nobody charged by writing status `released` (it never
    deletes): the handler's next claim takes the record over, fenced on what it read, keeps the
    first attempt's time (so the key's age rule still counts from it) and charges the order once."""
    from idem.core.reconcile import runbook
    from idem.core.handlers.keyed_orders import order_key

    link(world, "alice")
    obj = world.upload("alice/A-7.json", order("A-7", amount_cents=1250))
    key = order_key("alice", "A-7")
    started = world.clock.now()
    assert charger(world).ledger.claim(key, "gone", lease_until=started + 30).won  # an invocation that died
    world.clock.advance(HOUR)
    no_charges = runbook.StripeApi("sk_test_x", "http://127.0.0.1:1",
                                   lambda request: {"object": "search_result", "data": [], "has_more": False})
    plan = runbook.plan_settle(world.dynamodb, world.ledger_table, no_charges, key=key, now=world.clock.now())
    assert plan.action == "release", plan
    runbook.apply_settle(world.dynamodb, world.ledger_table, plan, now=world.clock.now())
    assert record_of(world).status is keyed.Status.RELEASED
    result = charge(world, obj)
    assert result["status"] == "charged" and len(world.provider().charges()) == 1
    line = record_of(world)
    assert line.status is keyed.Status.DONE and line.first_attempt_at == started
    assert charge(world, obj)["status"] == "duplicate" and len(world.provider().charges()) == 1
