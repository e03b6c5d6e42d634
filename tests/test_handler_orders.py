"""One charge per ORDER (/work/wt/docs/one_charge_per_order.md, ORDER_IDENTITY): the handler to copy, on moto and
the loopback Stripe (Stripe's own SDK over HTTP), against what uploaders really do."""
from __future__ import annotations

import json

import pytest

from idem.core.handlers import keyed
from idem.sim.runtime import LocalLambda
from idem.sim.stripe.server import loopback_stripe
from idem.sim.world import LocalWorld

HANDLER = "idem.core.handlers.keyed:lambda_handler"


def order(order_id: str, **more: object) -> bytes:
    """An order file: its id and amount (500 unless said: the amount is required)."""
    return json.dumps({"order_id": order_id, "amount_cents": 500, **more}).encode()


@pytest.fixture
def world():
    with LocalWorld() as w, loopback_stripe(w):
        yield w


def charger(world, identity="order-id"):
    price = {} if identity == "order-id" else {"price_per_upload_cents": 500}  # no file read: a price per upload
    return keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table,
                              order_identity=identity, **price), now=world.clock.now, s3=world.s3)


def charge(world, obj, identity="order-id"):
    return charger(world, identity).charge_once(keyed.Upload.of(obj), 30_000)


def test_the_uploaders_retried_put_is_charged_once(world):
    """The PUT timed out after S3 stored it; the SDK retried: a second version, the same bytes."""
    first = world.upload("alice/A-1001.json", order("A-1001", amount_cents=1250))
    retried = world.upload("alice/A-1001.json", order("A-1001", amount_cents=1250))
    assert first.version_id != retried.version_id and first.etag == retried.etag
    assert charge(world, first)["status"] == "charged"
    assert charge(world, retried)["status"] == "duplicate"
    (made,) = world.provider().charges()
    assert made.amount == 1250 and made.reference == f"s3://{world.bucket}/alice/A-1001.json"


def test_a_retried_put_after_a_charge_that_died_before_its_commit_replays_it(world):
    first = world.upload("alice/A-1001.json", order("A-1001"))
    retried = world.upload("alice/A-1001.json", order("A-1001"))
    ref = keyed.identify(keyed.Upload.of(first), "order-id", world.s3)
    world.provider().charge(customer="alice", amount=500, currency="usd", reference=ref.charge_reference,
                            idempotency_key=ref.idempotency_key, metadata=ref.metadata)  # charged, then the function died
    result = charge(world, retried)
    (made,) = world.provider().charges()
    assert result["status"] == "charged" and result["charge_id"] == made.id  # Stripe replayed it


def test_the_same_put_charged_per_upload_twice_on_purpose(world):
    """ORDER_IDENTITY=upload (kept for chapter 03): the retried PUT is a second charge."""
    first = world.upload("alice/A-1001.json", order("A-1001"))
    retried = world.upload("alice/A-1001.json", order("A-1001"))
    assert [charge(world, o, "upload")["status"] for o in (first, retried)] == ["charged", "charged"]
    assert len(world.provider().charges()) == 2


def test_a_second_order_at_the_same_name_gets_its_own_charge(world):
    assert charge(world, world.upload("alice/order.json", order("A-1")))["status"] == "charged"
    assert charge(world, world.upload("alice/order.json", order("A-2")))["status"] == "charged"
    assert len(world.provider().charges()) == 2


def test_a_corrected_reupload_of_a_charged_order_needs_attention_never_a_second_charge(world):
    assert charge(world, world.upload("alice/A-7.json", order("A-7", amount_cents=1000)))["status"] == "charged"
    corrected = world.upload("alice/A-7.json", order("A-7", amount_cents=1200))
    with pytest.raises(keyed.NeedsAttention, match="charged 1000 already.*asks 1200.*idem settle"):
        charge(world, corrected)
    assert [c.amount for c in world.provider().charges()] == [1000]


def test_a_corrected_reupload_while_the_first_is_unbooked_is_stripes_idempotency_error(world):
    first = world.upload("alice/A-7.json", order("A-7", amount_cents=1000))
    ref = keyed.identify(keyed.Upload.of(first), "order-id", world.s3)
    world.provider().charge(customer="alice", amount=1000, currency="usd", reference=ref.charge_reference,
                            idempotency_key=ref.idempotency_key, metadata=ref.metadata)  # charged, then died
    corrected = world.upload("alice/A-7.json", order("A-7", amount_cents=1200))
    with pytest.raises(keyed.NeedsAttention):
        charge(world, corrected)
    assert [c.amount for c in world.provider().charges()] == [1000]
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.NEEDS_ATTENTION


@pytest.mark.parametrize("body, says", [
    (b"sku,qty\nledger,1\n", "not a JSON|Expecting value"),
    (b'{"amount_cents": 500}', "names no order_id"),
    (b'["A-1"]', "not a JSON object"),
    (b'{"order_id": "A-1", "amount_cents": -5}', "amount_cents"),
    (b'{"order_id": "it\'s"}', "quote"),
])
def test_a_file_that_names_no_order_fails_closed_with_its_reason(world, body, says):
    obj = world.upload("alice/order.json", body)
    with pytest.raises(keyed.NeedsAttention, match=says):
        charge(world, obj)
    assert world.provider().charges() == []
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.NEEDS_ATTENTION and "nothing was charged" in record.result["reason"]


def test_a_file_without_an_order_id_reaches_the_failure_queue_through_lambda(world):
    runtime = LocalLambda(world, world.env(), handler=HANDLER, retries=2)
    runtime.send(world.event(world.upload("alice/order.csv", b"sku,qty\nledger,1\n")))
    runtime.run()
    assert world.provider().charges() == [] and world.failure_queue_depth() == 1
    logged = [json.loads(line) for a in runtime.attempts for line in a.logs if line.startswith("{")]
    assert any(o.get("outcome") == "needs_attention" and "names no order" in o["message"] for o in logged)


def test_object_name_identity_charges_a_name_once_whatever_is_written_to_it(world):
    first = world.upload("alice/A-9.json", b"first bytes")
    again = world.upload("alice/A-9.json", b"first bytes")  # a later write (the policy was missing)
    assert charge(world, first, "object-name")["status"] == "charged"
    assert charge(world, again, "object-name")["status"] == "duplicate"
    assert len(world.provider().charges()) == 1


def test_order_identity_is_checked_at_cold_start():
    with pytest.raises(keyed.ConfigError, match="ORDER_IDENTITY"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "ORDER_IDENTITY": "version"})
    assert keyed.settings_from_env({"LEDGER_TABLE": "t"}).order_identity == "order-id"


def test_the_default_upload_is_an_order_file_with_a_fresh_order_id():
    with LocalWorld() as world:
        bodies = [world.s3.get_object(Bucket=world.bucket, Key=world.upload(f"a/{n}").key)["Body"].read()
                  for n in range(2)]
    assert [json.loads(b)["order_id"] for b in bodies] == ["order-00001", "order-00002"]


def test_a_provider_written_to_the_protocol_accepts_every_argument_the_handler_sends(world):
    """PaymentProvider is what a reader implements for another provider: the handler sends only the
    keywords it names, a payment method chosen by the order file among them (docs/money_contract.md, 1)."""
    import inspect

    named = set(inspect.signature(keyed.PaymentProvider.charge).parameters) - {"self"}
    sent: list[dict[str, object]] = []
    stand_in = world.provider()

    class ToTheProtocol:
        def charge(self, **request: object) -> object:
            sent.append(request)
            return stand_in.charge(**request)

    c = keyed.KeyedCharger(world.dynamodb, ToTheProtocol(), keyed.Settings(world.ledger_table),
                           now=world.clock.now, s3=world.s3)
    obj = world.upload("alice/A-9.json", order("A-9", payment_method="pm_card_visa"))
    assert c.charge_once(keyed.Upload.of(obj), 30_000)["status"] == "charged"
    assert sent and set(sent[0]) <= named and sent[0].get("payment_method") == "pm_card_visa"
