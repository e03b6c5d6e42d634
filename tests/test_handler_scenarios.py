"""Issue #27's scenarios, end to end on moto and the loopback Stripe (Stripe's own SDK over HTTP):
the handler to copy starts cold as Lambda starts it (the secret from SSM, the key's mode against
STAGE), charges a live customer with its saved method once per order, reads every answer Stripe
sends over the wire by what it means, fails closed on an upload it cannot identify, and parks an
event past the key window when the search cannot answer. (Unit-level twins: test_handler_answers.py,
test_handler_orders.py, test_handler_budget.py.)"""
from __future__ import annotations

import json

import pytest
import stripe
import stripe._http_client

from idem.core.dynamo import from_item
from idem.core import customers
from idem.core.handlers import keyed
from idem.core.ledger import booked_totals
from idem.sim.stripe.server import loopback_stripe, seed_customer
from idem.sim.world import LocalWorld

DAY = 24 * 3600
LIVE_KEY, TEST_KEY = "sk_live_SCENARIO_NEVER_LOGGED", "sk_test_SCENARIO_NEVER_LOGGED"


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch):
    """The SDK sleeps between its retries on the real clock: not here."""
    monkeypatch.setattr(stripe._http_client.HTTPClient, "_sleep_time_seconds", lambda self, n, response=None: 0.0)


@pytest.fixture
def world():
    with LocalWorld() as w:
        yield w


@pytest.fixture
def server(world):
    with loopback_stripe(world) as s:
        yield s


class Context:
    aws_request_id, function_name = "req-scenario", "charge"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def cold_start(monkeypatch, world, server, secret: str, stage: str) -> None:
    """The function's environment as template.yaml sets it, the secret in SSM (moto), and no
    container yet: the next invocation builds the settings, the clients and the provider."""
    import boto3

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name="/idem/scenario/stripe", Value=secret, Type="SecureString", Overwrite=True)
    for name, value in {"LEDGER_TABLE": world.ledger_table, "STRIPE_SECRET_PARAMETER": "/idem/scenario/stripe",
                        "STRIPE_API_BASE": server.url, "STAGE": stage, "STACK_NAME": "idem-scenario"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(keyed, "_charger", None)


def link(world, account: str, customer: str) -> None:
    """Who pays for the account, as the runbook's `idem customers link` records it."""
    customers.link(world.dynamodb, world.ledger_table, account, customer, reason="onboarding",
                   caller="arn:aws:iam::123456789012:user/ops", now=world.clock.now())


def intents(server, secret: str) -> list[dict]:
    """The PaymentIntents of the key's mode, as Stripe lists them."""
    client = stripe.StripeClient(secret, base_addresses={"api": server.url}, max_network_retries=0)
    return [i.to_dict() for i in client.v1.payment_intents.list().auto_paging_iter()]


# -- a live customer, charged once per order with its saved method ---------------------------------------
def test_a_live_customer_is_charged_once_per_order_with_its_saved_method(world, server, monkeypatch, capsys):
    customer, saved = seed_customer(server, mode="live", payment_method="card", customer_id="cus_alice")
    link(world, "alice", customer)
    cold_start(monkeypatch, world, server, LIVE_KEY, "prod")
    order = json.dumps({"order_id": "A-1001", "amount_cents": 1250, "currency": "usd", "customer": customer}).encode()
    first = keyed.lambda_handler(world.event(world.upload("alice/order.json", order)), Context())
    again = keyed.lambda_handler(world.event(world.upload("alice/order.json", order)), Context())  # retried PUT
    assert [p["status"] for r in (first, again) for p in r["processed"]] == ["charged", "duplicate"]
    (intent,) = intents(server, LIVE_KEY)
    assert (intent["customer"], intent["payment_method"], intent["amount"], intent["status"]) == (
        customer, saved, 1250, "succeeded")
    assert intent["metadata"]["idem_stack"] == "idem-scenario"
    assert intents(server, TEST_KEY) == []  # live money only: the test card is never a live default
    assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (1, 1250)
    assert LIVE_KEY not in capsys.readouterr().out


def test_an_order_naming_its_payment_method_is_charged_with_that_method(world, server, monkeypatch):
    customer, default = seed_customer(server, mode="live", payment_method="card", customer_id="cus_bob")
    card = server.account.create_payment_method("live", type="card", behaviour="succeeds", last4="1111")
    other = server.account.attach("live", card["id"], customer)["id"]  # a second saved card of bob's
    assert other != default
    link(world, "bob", customer)
    cold_start(monkeypatch, world, server, LIVE_KEY, "prod")
    order = json.dumps({"order_id": "B-1", "amount_cents": 900, "customer": customer, "payment_method": other}).encode()
    result = keyed.lambda_handler(world.event(world.upload("bob/order.json", order)), Context())
    assert [p["status"] for p in result["processed"]] == ["charged"]
    (intent,) = intents(server, LIVE_KEY)
    assert intent["payment_method"] == other and intent["customer"] == customer


# -- the key's mode against the stage, at cold start ------------------------------------------------------
@pytest.mark.parametrize("secret, stage, says", [
    (TEST_KEY, "prod", "a test Stripe key where STAGE is prod"),
    (LIVE_KEY, "staging", "a live Stripe key where STAGE is staging"),
])
def test_a_key_of_the_wrong_mode_refuses_to_start_and_charges_nothing(world, server, monkeypatch, capsys,
                                                                      secret, stage, says):
    cold_start(monkeypatch, world, server, secret, stage)
    event = world.event(world.upload("alice/order.json"))
    for _ in range(2):  # every invocation: the container never starts
        with pytest.raises(keyed.ConfigError, match=says):
            keyed.lambda_handler(event, Context())
    assert server.requests == [] and world.ledger().records() == []
    out = capsys.readouterr().out
    assert sum("refused to start" in line for line in out.splitlines()) == 2 and secret not in out


# -- every answer Stripe sends over the wire, by what it means -------------------------------------------
def charger(world):
    """keyed with Stripe's adapter (keyed_stripe.StripeProvider, as make_provider builds it) aimed at
    the loopback: what a deployed function runs. (world.provider() wraps it for the local runtime.)"""
    return keyed.KeyedCharger(world.dynamodb, world.provider().adapter, keyed.Settings(world.ledger_table),
                              now=world.clock.now, s3=world.s3)


@pytest.mark.parametrize("fault, decline_code", [
    ("card_declined", "generic_decline"), ("insufficient_funds", "insufficient_funds"),
    ("expired_card", "expired_card"), ("authentication_required", "authentication_required"),
])
def test_a_card_error_is_a_final_decline_with_its_decline_code(world, server, fault, decline_code):
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    server.inject(fault)
    result = charger(world).charge_once(upload, 30_000)
    assert (result["status"], result["decline_code"]) == ("declined", decline_code)
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.DECLINED and record.result["decline_code"] == decline_code
    assert charger(world).charge_once(upload, 30_000)["status"] == "declined"  # Lambda's retry: the same answer
    assert world.provider().charges() == []


@pytest.mark.parametrize("fault", ["rate_limit", "rate_limit_400", "lock_timeout", "unavailable", "in_flight",
                                   "drop_before", "drop_after"])
def test_a_rate_limit_a_lock_an_outage_or_a_lost_connection_is_retried_with_the_same_key(world, server, fault):
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    server.inject(fault)
    with pytest.raises((stripe.RateLimitError, stripe.APIError, stripe.APIConnectionError)):
        charger(world).charge_once(upload, 30_000)
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.IN_PROGRESS and record.lease_until <= world.clock.now()  # released
    world.clock.advance(60)  # Lambda's retry, a minute later, with the same event
    assert charger(world).charge_once(upload, 30_000)["status"] == "charged"
    assert len(world.provider().charges()) == 1  # drop_after: the first charge, replayed by its key


@pytest.mark.parametrize("fault, charged, says", [("api_error", 1, "idem settle"),
                                                  ("invalid_request", 0, "nothing was charged")])
def test_a_saved_500_or_an_invalid_request_needs_a_person(world, server, fault, charged, says):
    """A saved 500 may stand for a charge (`idem settle` finds it); a 400 invalid_request_error on the order's
    first attempt moved no money, and says so (docs/money_contract.md, "Answers by meaning"; round 6)."""
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    server.inject(fault)
    with pytest.raises(keyed.NeedsAttention, match=says):
        charger(world).charge_once(upload, 30_000)
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.NEEDS_ATTENTION and record.unsent is (fault == "invalid_request")
    assert len(world.provider().charges()) == charged


def test_a_corrected_order_is_stripes_idempotency_error_and_needs_a_person(world, server):
    first = keyed.Upload.of(world.upload("alice/order.json", b'{"order_id": "A-7", "amount_cents": 500}'))
    ref = keyed.identify(first, "order-id", world.s3)
    # the first attempt charged 500 and died before its commit; the uploader then corrects the amount
    world.provider().charge(customer=first.account, amount=500, currency="usd", reference=ref.charge_reference,
                            idempotency_key=ref.idempotency_key, metadata=ref.metadata)
    world.clock.advance(3600)  # inside the key window: the corrected file comes in
    corrected = keyed.Upload.of(world.upload("alice/order.json", b'{"order_id": "A-7", "amount_cents": 900}'))
    with pytest.raises(keyed.NeedsAttention, match="idempotency_error"):
        charger(world).charge_once(corrected, 30_000)
    assert len(world.provider().charges()) == 1  # never a second charge


@pytest.mark.parametrize("fault, outcome, record", [("processing", "pending", "pending"),
                                                    ("requires_action", "declined", "declined")])
def test_a_payment_intents_status_is_read_by_what_it_means(world, server, fault, outcome, record):
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    server.inject(fault)
    assert charger(world).charge_once(upload, 30_000)["status"] == outcome
    (stored,) = world.ledger().records()
    assert stored.status.value == record
    assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (0, 0)  # nothing booked yet


# -- an upload whose identity is incomplete fails closed ------------------------------------------------
@pytest.mark.parametrize("identity", ["order-id", "upload"])
def test_an_eventbridge_upload_with_no_version_etag_or_sequencer_fails_closed(monkeypatch, identity):
    """EventBridge's Object Created event may lack size, etag, version-id and sequencer
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html): with nothing to tell
    this upload from a later one of the same name, it is held for a person, never charged."""
    with LocalWorld(versioned=False) as world:
        monkeypatch.setattr(keyed, "_charger", keyed.KeyedCharger(
            world.dynamodb, world.provider(), keyed.Settings(world.ledger_table, order_identity=identity,
                                                             price_per_upload_cents=500),
            now=world.clock.now, s3=world.s3))
        obj = world.upload("alice/order.json")
        event = {"source": "aws.s3", "detail-type": "Object Created", "time": "2026-01-01T00:00:00Z",
                 "detail": {"bucket": {"name": obj.bucket}, "reason": "PutObject", "object": {"key": obj.key}}}
        with pytest.raises(keyed.NeedsAttention, match="no version id and no eTag|no sequencer"):
            keyed.lambda_handler(event, Context())  # raised: Lambda sends the event to the failure queue
        (record,) = world.ledger().records()
        assert record.status is keyed.Status.NEEDS_ATTENTION and "nothing was charged" in record.result["reason"]
        assert world.provider().charges() == []


# -- past the key window -------------------------------------------------------------------------------
def test_past_the_key_window_a_search_that_finds_nothing_lets_the_order_be_charged(world, server):
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    world.clock.advance(DAY + 3600)  # a redrive from the failure queue, 25 h later
    assert charger(world).charge_once(upload, 30_000)["status"] == "charged"
    assert server.requests.index(("GET", "/v1/payment_intents/search")) < server.requests.index(
        ("POST", "/v1/payment_intents"))  # proven first, then charged
    assert len(world.provider().charges()) == 1


def test_past_the_key_window_with_stripes_search_down_the_order_is_parked(world, server):
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    world.clock.advance(DAY + 3600)
    server.inject("unavailable", method="GET", path="/v1/payment_intents/search")
    with pytest.raises(keyed.NeedsAttention, match="look-up failed.*idem settle"):
        charger(world).charge_once(upload, 30_000)
    assert ("POST", "/v1/payment_intents") not in server.requests and world.provider().charges() == []
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.NEEDS_ATTENTION


# -- what the provider is told: the order, for the reconciliation ------------------------------------------
def test_every_payment_intent_names_its_order_bucket_key_and_stack_never_the_version(world, server, monkeypatch):
    """docs/one_charge_per_order.md: the reconciliation groups Stripe's charges by order_id and
    bucket, so two orders at one name are two orders, not a double charge."""
    cold_start(monkeypatch, world, server, TEST_KEY, "staging")
    versions = []
    for order_id in ("A-1", "A-1", "A-2"):  # an order, the uploader's retried PUT, a second order at the name
        obj = world.upload("alice/order.json", json.dumps({"order_id": order_id, "amount_cents": 500}).encode())
        versions.append(obj.version_id)
        keyed.lambda_handler(world.event(obj), Context())
    made = sorted(intents(server, TEST_KEY), key=lambda i: i["metadata"]["order_id"])
    assert [(i["metadata"]["order_id"], i["metadata"]["bucket"], i["metadata"]["key"]) for i in made] == [
        ("A-1", world.bucket, "alice/order.json"), ("A-2", world.bucket, "alice/order.json")]
    assert all(i["metadata"]["idem_stack"] == "idem-scenario" for i in made)
    assert all(v and v not in json.dumps(i["metadata"]) for i in made for v in versions)


def test_the_stand_in_keeps_the_orders_metadata_too(world):
    charger = keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    body = b'{"order_id": "A-9", "amount_cents": 500}'
    charger.charge_once(keyed.Upload.of(world.upload("alice/order.json", body)), 30_000)
    (item,) = [i for i in map(from_item, world.table_items(world.provider_table)) if i.get("kind") == "charge"]
    assert item["metadata"] == {"order_id": "A-9", "bucket": world.bucket, "key": "alice/order.json",
                                "idem_account": "alice"}


def test_the_local_runtimes_stripe_passes_the_intents_status_on(world, server):
    """world.provider() over the loopback (the workbook's and `idem check`'s provider) hands keyed
    the PaymentIntent's status, so a `processing` intent is pending there too, never charged."""
    server.inject("processing")
    charger = keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    assert charger.charge_once(keyed.Upload.of(world.upload("alice/order.json")), 30_000)["status"] == "pending"


def test_an_order_naming_its_customer_and_method_is_charged_by_the_stand_in_too(world):
    """The workbook's and `idem check`'s default provider takes the order's payment method (it
    moves no real money), so an order file written for Stripe runs there unchanged."""
    charger = keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    link(world, "carol", "cus_carol")
    body = json.dumps({"order_id": "C-1", "amount_cents": 500, "customer": "cus_carol",
                       "payment_method": "pm_saved"}).encode()
    assert charger.charge_once(keyed.Upload.of(world.upload("carol/order.json", body)), 30_000)["status"] == "charged"
    (made,) = world.provider().charges()
    assert made.customer == "cus_carol"
