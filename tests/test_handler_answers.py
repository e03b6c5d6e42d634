"""Every answer the real world gives the handler to copy, classified by what it means: only
uploads are charged, SQS batches are answered per message, Stripe's errors are read by their
`type` and `code` (stripe-python's own exception classes), PaymentIntent statuses by what they
mean, and a commit re-sent after its answer was lost counts as the success it was."""
from __future__ import annotations

import dataclasses
import json
import logging

import pytest
import stripe

from idem.core.events import s3_record
from idem.core.handlers import keyed, keyed_events
from idem.core.ledger import booked_totals
from idem.sim.world import LocalWorld

DAY = 24 * 3600


@pytest.fixture
def world():
    with LocalWorld() as w:
        yield w


class Context:
    aws_request_id, function_name = "req-1", "charge"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class Answering:
    """A provider that answers each charge with what it is told (an error, or a status)."""

    def __init__(self, world, answer):
        self.inner, self.answer = world.provider(), answer

    def charge(self, **request):
        if isinstance(self.answer, BaseException):
            raise self.answer
        made = self.inner.charge(**request)
        return dataclasses.replace(made) if self.answer is None else _WithStatus(made.id, made.amount, self.answer)


@dataclasses.dataclass
class _WithStatus:
    id: str
    amount: int
    status: str


def use(world, monkeypatch, provider=None, **settings):
    charger = keyed.KeyedCharger(world.dynamodb, provider or world.provider(),
                                 keyed.Settings(world.ledger_table, **settings), now=world.clock.now, s3=world.s3)
    monkeypatch.setattr(keyed, "_charger", charger)
    return charger


def printed(capsys):
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


# -- only uploads are charged ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ObjectCreated:Copy", "ObjectCreated:CompleteMultipartUpload"])
def test_a_copy_is_not_charged_and_counted_ignored_a_multipart_upload_is(world, monkeypatch, capsys, name):
    use(world, monkeypatch)
    record = s3_record(world.upload("alice/order.json"))
    record["eventName"] = name
    result = keyed.lambda_handler({"Records": [record]}, Context())
    (doc,) = [o for o in printed(capsys) if "_aws" in o]
    if name == "ObjectCreated:Copy":
        assert result["processed"] == [] and world.provider().charges() == []
        assert doc["ignored"] == 1 and doc["charged"] == 0
    else:
        assert len(world.provider().charges()) == 1 and doc["charged"] == 1


def test_an_eventbridge_copy_is_not_charged(world, monkeypatch):
    use(world, monkeypatch)
    obj = world.upload("alice/order.json")
    event = {"source": "aws.s3", "detail-type": "Object Created", "time": "2026-01-01T00:00:00Z",
             "detail": {"bucket": {"name": obj.bucket}, "reason": "CopyObject",
                        "object": {"key": obj.key, "size": obj.size, "etag": obj.etag,
                                   "version-id": obj.version_id, "sequencer": obj.sequencer}}}
    assert keyed.lambda_handler(event, Context())["processed"] == []
    event["detail"]["reason"] = "PutObject"
    assert [p["status"] for p in keyed.lambda_handler(event, Context())["processed"]] == ["charged"]


@pytest.mark.parametrize("reason, charged", [("PutObject", True), ("POST Object", True),
                                             ("CompleteMultipartUpload", True), ("CopyObject", False)])
def test_eventbridge_reasons_are_charged_as_s3_names_them(world, monkeypatch, reason, charged):
    """The reasons S3 gives EventBridge's Object Created events: PutObject, POST Object (a form
    upload, with a space), CopyObject, CompleteMultipartUpload
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html)."""
    use(world, monkeypatch)
    obj = world.upload("alice/order.json")
    event = {"source": "aws.s3", "detail-type": "Object Created", "time": "2026-01-01T00:00:00Z",
             "detail": {"bucket": {"name": obj.bucket}, "reason": reason,
                        "object": {"key": obj.key, "size": obj.size, "etag": obj.etag,
                                   "version-id": obj.version_id, "sequencer": obj.sequencer}}}
    processed = keyed.lambda_handler(event, Context())["processed"]
    assert [p["status"] for p in processed] == (["charged"] if charged else [])
    assert len(world.provider().charges()) == (1 if charged else 0)


def test_the_allow_list_is_a_setting():
    settings = keyed.settings_from_env({"LEDGER_TABLE": "t", "CHARGE_EVENTS": "ObjectCreated:Put"})
    assert settings.charge_events == ("ObjectCreated:Put",)
    with pytest.raises(keyed.ConfigError, match="CHARGE_EVENTS"):
        keyed.settings_from_env({"LEDGER_TABLE": "t", "CHARGE_EVENTS": "Put"})


def test_an_unversioned_upload_without_a_sequencer_fails_closed_in_upload_identity(monkeypatch):
    with LocalWorld(versioned=False) as world:
        charger = use(world, monkeypatch, order_identity="upload", price_per_upload_cents=500)
        obj = dataclasses.replace(world.upload("alice/order.json"), sequencer="")
        with pytest.raises(keyed.NeedsAttention, match="no sequencer"):
            charger.charge_once(keyed.Upload.of(obj), 30_000)
        assert world.provider().charges() == []


# -- SQS: answered per message -----------------------------------------------------------------------
def sqs(message_id, body):
    return {"messageId": message_id, "eventSource": "aws:sqs", "body": body if isinstance(body, str) else json.dumps(body)}


def test_a_mixed_sqs_batch_is_answered_per_message(world, monkeypatch):
    use(world, monkeypatch)
    good = {"Records": [s3_record(world.upload("alice/a.json"))]}
    unordered = {"Records": [s3_record(world.upload("bob/b.csv", b"sku,qty\n"))]}  # names no order
    event = {"Records": [sqs("m-good", good), sqs("m-test", {"Event": "s3:TestEvent", "Bucket": world.bucket}),
                         sqs("m-text", "hello"), sqs("m-other", {"hello": "world"}), sqs("m-bad", unordered)]}
    answer = keyed.lambda_handler(event, Context())
    assert answer == {"batchItemFailures": [{"itemIdentifier": m} for m in ("m-text", "m-other", "m-bad")]}
    assert len(world.provider().charges()) == 1  # the good message charged once; the test event acknowledged


class Draining(Context):
    """A context whose time runs out: 29 s left for the first upload, 10 s after it."""

    def __init__(self) -> None:
        self.asked = 0

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        return 29_000 if self.asked == 1 else 10_000


def test_a_batch_stops_before_an_upload_whose_slowest_path_would_outlast_the_function(world, monkeypatch):
    """SQS hands up to 10 messages; one upload's slowest path (every call timing out) is about
    26 s. An upload started with less time left could be cut off mid-charge, and the whole batch
    retried; instead it is not started, and only it and those after it come back."""
    use(world, monkeypatch)
    events = [{"Records": [s3_record(world.upload(f"carol/{n}.json"))]} for n in range(3)]
    batch = {"Records": [sqs(f"m-{n}", e) for n, e in enumerate(events)]}
    answer = keyed.lambda_handler(batch, Draining())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}]}
    assert len(world.provider().charges()) == 1  # the first; the other two were not started
    retried = {"Records": [sqs(f"m-{n}", e) for n, e in enumerate(events) if n > 0]}
    assert keyed.lambda_handler(retried, Context()) == {"batchItemFailures": []}
    assert len(world.provider().charges()) == 3  # each order charged once, none twice


def test_with_time_enough_every_upload_of_a_batch_is_charged(world, monkeypatch):
    use(world, monkeypatch)
    batch = {"Records": [sqs(f"m-{n}", {"Records": [s3_record(world.upload(f"dan/{n}.json"))]}) for n in range(3)]}
    assert keyed.lambda_handler(batch, Context()) == {"batchItemFailures": []}
    assert len(world.provider().charges()) == 3


# -- Stripe's errors, by type and code ---------------------------------------------------------------
def error(cls, http_status, kind, code, decline_code=None, message="x"):
    body = {"error": {"type": kind, "code": code, "message": message,
                      **({"decline_code": decline_code} if decline_code else {})}}
    if cls in (stripe.CardError, stripe.InvalidRequestError):  # these take (message, param, code)
        return cls(message, None, code, http_status=http_status, json_body=body)
    return cls(message, http_status=http_status, json_body=body)


@pytest.mark.parametrize("answer, outcome, record", [
    (error(stripe.CardError, 402, "card_error", "card_declined", "insufficient_funds"), "declined", "declined"),
    (error(stripe.CardError, 402, "card_error", "authentication_required", "authentication_required"),
     "declined", "declined"),
    (error(stripe.RateLimitError, 429, "invalid_request_error", "rate_limit"), "retry", "in_progress"),
    (error(stripe.RateLimitError, 400, "invalid_request_error", "rate_limit"), "retry", "in_progress"),
    (error(stripe.RateLimitError, 429, "invalid_request_error", "lock_timeout"), "retry", "in_progress"),
    (error(stripe.APIError, 503, "api_error", None), "retry", "in_progress"),
    (error(stripe.APIError, 500, "api_error", None), "needs_attention", "needs_attention"),  # saved, replayed
    (error(stripe.APIError, 409, "idempotency_error", "idempotency_key_in_use"), "retry", "in_progress"),
    (stripe.APIConnectionError("connection reset"), "retry", "in_progress"),
    (error(stripe.IdempotencyError, 400, "idempotency_error", None), "needs_attention", "needs_attention"),
    (error(stripe.InvalidRequestError, 400, "invalid_request_error", "parameter_missing"),
     "needs_attention", "needs_attention"),
])
def test_each_stripe_error_is_handled_as_it_means(world, monkeypatch, answer, outcome, record):
    charger = use(world, monkeypatch, provider=Answering(world, answer))
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    if outcome == "declined":
        result = charger.charge_once(upload, 30_000)
        assert result["status"] == "declined" and result["decline_code"] == answer.error.decline_code
    else:
        with pytest.raises(keyed.NeedsAttention if outcome == "needs_attention" else type(answer)):
            charger.charge_once(upload, 30_000)
    (stored,) = world.ledger().records()
    assert stored.status.value == record
    if record == "in_progress":  # released: Lambda's retry a minute later takes it over at once
        assert stored.lease_until <= world.clock.now()


@pytest.mark.parametrize("status, outcome", [("succeeded", "charged"), ("processing", "pending"),
                                             ("requires_action", "declined"),
                                             ("requires_payment_method", "declined")])
def test_payment_intent_statuses_mean_what_stripe_says(world, monkeypatch, capsys, status, outcome):
    use(world, monkeypatch, provider=Answering(world, status))
    keyed.lambda_handler(world.event(world.upload("alice/order.json")), Context())
    (doc,) = [o for o in printed(capsys) if "_aws" in o]
    assert doc[outcome] == 1 and sum(doc[n] for n in ("charged", "pending", "declined")) == 1
    (stored,) = world.ledger().records()
    assert stored.status.value == {"charged": "done"}.get(outcome, outcome)
    booked = booked_totals(world.dynamodb, world.ledger_table, "alice")
    assert booked == ((1, 500) if outcome == "charged" else (0, 0))  # pending is booked when it settles


def test_a_pending_order_is_not_charged_again(world, monkeypatch):
    charger = use(world, monkeypatch, provider=Answering(world, "processing"))
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    assert charger.charge_once(upload, 30_000)["status"] == "pending"
    assert charger.charge_once(upload, 30_000)["status"] == "pending"
    assert len(world.provider().charges()) == 1


def test_declines_and_pendings_are_metrics():
    doc = keyed_events.metrics_document({"declined": 2, "pending": 1}, "charge", 0)
    names = {m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"declined", "pending", "ignored", "malformed"} <= names and doc["declined"] == 2


# -- a resent commit is a success ----------------------------------------------------------------------
class Resending:
    """DynamoDB whose answer to the commit is lost: botocore sends the same write again."""

    def __init__(self, client):
        self.client = client

    def put_item(self, **request):
        if request["Item"].get("status", {}).get("S") in ("done", "declined"):
            self.client.put_item(**request)  # it went through; its answer never came back
        return self.client.put_item(**request)

    def update_item(self, **request):
        if ":status" in request.get("ExpressionAttributeValues", {}):
            self.client.update_item(**request)
        return self.client.update_item(**request)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_commit_resent_after_its_answer_was_lost_counts_the_order_charged(world, caplog):
    charger = keyed.KeyedCharger(Resending(world.dynamodb), world.provider(), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    with caplog.at_level(logging.WARNING, logger="keyed"):
        result = charger.charge_once(keyed.Upload.of(world.upload("alice/order.json")), 30_000)
    assert result["status"] == "charged"  # not "superseded": it was our own write
    assert "lost ownership" not in caplog.text
    assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (1, 500)


def test_a_decline_resent_after_its_answer_was_lost_is_still_a_decline(world):
    answer = error(stripe.CardError, 402, "card_error", "card_declined", "do_not_honor")
    charger = keyed.KeyedCharger(Resending(world.dynamodb), Answering(world, answer),
                                 keyed.Settings(world.ledger_table), now=world.clock.now, s3=world.s3)
    assert charger.charge_once(keyed.Upload.of(world.upload("alice/order.json")), 30_000)["status"] == "declined"


def test_a_zombie_commit_is_still_refused(world):
    charger = keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    upload = keyed.Upload.of(world.upload("alice/order.json"))
    ref = charger.order_of(upload)
    claim = charger.ledger.claim(ref.idempotency_key, "zombie", world.clock.now() + 1)
    world.clock.advance(5)
    assert charger.ledger.claim(ref.idempotency_key, "next", world.clock.now() + 30).won
    with pytest.raises(keyed.LostOwnership):
        charger.ledger.commit(claim.mine, {"status": "charged"}, "alice", 500, "ch_x")


# -- the key window ------------------------------------------------------------------------------------
class SearchDown:
    """Stripe's search unavailable (an outage): it raises, as stripe-python raises an APIError."""

    def __init__(self, world):
        self.inner = world.provider()

    def charge(self, **request):
        return self.inner.charge(**request)

    def find_charges(self, reference, idempotency_key):
        raise stripe.APIError("search is unavailable", http_status=503)


def test_an_event_past_the_key_window_with_the_search_down_is_parked_not_charged(world):
    charger = keyed.KeyedCharger(world.dynamodb, SearchDown(world), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    obj = world.upload("alice/order.json")
    world.clock.advance(DAY + 3600)  # a redrive from the failure queue, 25 h later: the key may be pruned
    with pytest.raises(keyed.NeedsAttention, match=r"25.0 h old.*look-up failed.*idem settle"):
        charger.charge_once(keyed.Upload.of(obj), 30_000)
    assert world.provider().charges() == []
    (record,) = world.ledger().records()
    assert record.status is keyed.Status.NEEDS_ATTENTION


def test_an_event_inside_the_key_window_never_asks_the_search(world):
    charger = keyed.KeyedCharger(world.dynamodb, SearchDown(world), keyed.Settings(world.ledger_table),
                                 now=world.clock.now, s3=world.s3)
    obj = world.upload("alice/order.json")
    world.clock.advance(DAY - 60)
    assert charger.charge_once(keyed.Upload.of(obj), 30_000)["status"] == "charged"


# -- the live customer -----------------------------------------------------------------------------------
class FakeStripe:
    """Records what the adapter asks Stripe's client (the shapes are stripe-python's)."""

    def __init__(self, default_method="pm_saved"):
        self.created, self.default_method = [], default_method
        self.v1 = self
        self.payment_intents, self.customers = self, self

    def create(self, params, options):
        self.created.append(params)
        return type("Intent", (), {"id": "pi_1", "amount": params["amount"], "status": "succeeded"})()

    def retrieve(self, customer):
        settings = {"default_payment_method": self.default_method}
        return type("Customer", (), {"to_dict": lambda self: {"id": customer, "invoice_settings": settings}})()


def test_a_live_customer_is_charged_off_session_with_the_saved_default_method():
    from idem.core.handlers.keyed_stripe import StripeProvider

    fake = FakeStripe()
    StripeProvider(fake, live=True).charge(customer="cus_123", amount=1250, currency="usd", reference="r",
                                           idempotency_key="k")
    (params,) = fake.created
    assert params["customer"] == "cus_123" and params["payment_method"] == "pm_saved"
    assert params["off_session"] is True and params["confirm"] is True


def test_the_test_card_is_never_a_default_outside_test_mode():
    from idem.core.handlers.keyed_stripe import NoPaymentMethod, StripeProvider

    with pytest.raises(NoPaymentMethod):
        StripeProvider(FakeStripe(), live=True).charge(customer="alice", amount=500, currency="usd", reference="r")
    with pytest.raises(NoPaymentMethod):  # a customer with nothing saved
        StripeProvider(FakeStripe(None), live=True).charge(customer="cus_1", amount=500, currency="usd", reference="r")
    fake = FakeStripe()
    StripeProvider(fake).charge(customer="alice", amount=500, currency="usd", reference="r")
    assert fake.created[0]["payment_method"] == "pm_card_visa" and "customer" not in fake.created[0]
    from idem.core.handlers.keyed_stripe import meaning_of

    assert meaning_of(NoPaymentMethod("x")).what == "needs_attention"  # a person adds a method
