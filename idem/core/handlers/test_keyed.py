"""Tests that ship with the handler to copy: copy them beside keyed*.py and run `pytest` there.

They need only pytest, boto3, moto and stripe (no idem, no network): DynamoDB, S3 and SSM are
moto's; Stripe is `FakeStripe`, an HTTP client handed to Stripe's own SDK (stripe.HTTPClient) that
answers the few endpoints the handler calls, with Stripe's idempotency rules
(https://docs.stripe.com/api/idempotent_requests): the first answer for a key is replayed, other
parameters under a used key are an idempotency_error, and a pruned key charges anew. What they
pin is docs/money_contract.md's core: one succeeded charge per (account, order) over its life,
of the file's amount, to the account's linked customer, or the order parked with its reason.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlsplit

import boto3  # type: ignore[import-untyped, unused-ignore]
import pytest
import stripe
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the copied files, by their plain names
import keyed  # noqa: E402
from keyed_orders import order_key  # noqa: E402
from keyed_settings import (ConfigError, NeedsAttention, ProviderAuthFailed, RecordsFailed,  # noqa: E402
                            settings_from_env)

TABLE, BUCKET, REGION = "ledger", "uploads", "us-east-1"
CUSTOMERS = {"alice": "cus_alice", "bob": "cus_bob"}  # carol has no linked customer


class FakeStripe(stripe.HTTPClient):
    """Stripe's API v1, the part the handler calls, behind Stripe's SDK."""

    name = "fake"

    def __init__(self) -> None:
        super().__init__()
        self.intents: list[dict[str, Any]] = []
        self.keys: dict[str, tuple[str, tuple[str, int, dict[str, str]]]] = {}  # key -> (params, answer)
        self.next_faults: list[str] = []  # "lost_after" (charged, answer lost), "decline", "401"
        self.secret = ""

    def request(self, method: str, url: str, headers: Any, post_data: Any = None,
                *, _usage: Any = None) -> tuple[str, int, dict[str, str]]:
        parts = urlsplit(url)
        self.secret = str((headers or {}).get("Authorization", ""))
        fault = self.next_faults.pop(0) if self.next_faults else ""
        if fault == "401":
            return self.error(401, "invalid_request_error", "api_key_expired")
        if method == "get" and parts.path.startswith("/v1/customers/"):
            customer = parts.path.rsplit("/", 1)[1]
            return json.dumps({"id": customer, "object": "customer",
                               "invoice_settings": {"default_payment_method": f"pm_{customer[4:]}"}}), 200, {}
        if method == "get" and parts.path == "/v1/payment_intents/search":
            query = dict(parse_qsl(parts.query))["query"]
            wanted = query.split(":", 1)[1].strip("'")
            found = [i for i in self.intents if i["metadata"].get("idempotency_key") == wanted]
            return json.dumps({"object": "search_result", "data": found, "has_more": False,
                               "url": "/v1/payment_intents/search"}), 200, {}
        assert method == "post" and parts.path == "/v1/payment_intents", (method, url)
        key, params = str((headers or {}).get("Idempotency-Key", "")), str(post_data or "")
        if key in self.keys:
            sent, answer = self.keys[key]
            if sent != params:
                return self.error(400, "idempotency_error", "", "Keys for idempotent requests can only be used "
                                  "with the same parameters they were first used with.")
            return answer
        answer = (self.error(402, "card_error", "card_declined") if fault == "decline" else self.create(params))
        self.keys[key] = (params, answer)
        if fault == "lost_after":
            raise stripe.APIConnectionError("the connection was lost after Stripe answered")  # type: ignore[no-untyped-call, unused-ignore]
        return answer

    def create(self, params: str) -> tuple[str, int, dict[str, str]]:
        form = parse_qsl(params)
        values = dict(form)
        intent = {"id": f"pi_{len(self.intents) + 1}", "object": "payment_intent", "status": "succeeded",
                  "amount": int(values["amount"]), "currency": values["currency"],
                  "customer": values.get("customer"), "payment_method": values.get("payment_method"),
                  "metadata": {k[9:-1]: v for k, v in form if k.startswith("metadata[")}}
        self.intents.append(intent)
        return json.dumps(intent), 200, {}

    @staticmethod
    def error(status: int, kind: str, code: str, message: str = "refused") -> tuple[str, int, dict[str, str]]:
        return json.dumps({"error": {"type": kind, "code": code or None, "message": message}}), status, {}

    def prune_keys(self) -> None:
        """Stripe may remove keys once they are 24 hours old: the same key then charges anew."""
        self.keys.clear()

    def charges_of(self, order_id: str) -> list[dict[str, Any]]:
        return [i for i in self.intents if i["metadata"].get("order_id") == order_id]


class Context:
    aws_request_id, function_name = "req-1", "charge"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeStripe]:
    """moto's AWS with the stack's table, bucket and secret, and the fake Stripe behind the SDK."""
    server = FakeStripe()
    for name, value in {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "LEDGER_TABLE": TABLE,
                        "STRIPE_SECRET_PARAMETER": "/charge/stripe", "STAGE": "test"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("STRIPE_API_BASE", raising=False)
    monkeypatch.setattr(stripe, "RequestsClient", lambda **_: server)  # the SDK's client: the fake
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                                  for n, t in (("pk", "S"), ("account", "S"), ("booked_at", "N"))],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": "by_account", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "account", "KeyType": "HASH"},
                                                   {"AttributeName": "booked_at", "KeyType": "RANGE"}]}])
        for account, customer in CUSTOMERS.items():  # what `idem customers link` writes
            dynamodb.put_item(TableName=TABLE, Item={
                "pk": {"S": f"account#{account}"}, "kind": {"S": "customer"}, "account": {"S": account},
                "customer": {"S": customer}, "reason": {"S": "test"}})
        boto3.client("ssm", region_name=REGION).put_parameter(
            Name="/charge/stripe", Value="sk_test_FAKE", Type="SecureString")
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        keyed._charger = None  # a cold start for every test
        yield server
        keyed._charger = None


def put(key: str, body: dict[str, Any] | str, at: float | None = None) -> dict[str, Any]:
    """Upload a file, and the event S3 sends for it."""
    data = (body if isinstance(body, str) else json.dumps(body)).encode()
    done = boto3.client("s3", region_name=REGION).put_object(Bucket=BUCKET, Key=key, Body=data)
    when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() if at is None else at))
    return {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": REGION, "eventTime": when,
                         "eventName": "ObjectCreated:Put",
                         "s3": {"bucket": {"name": BUCKET},
                                "object": {"key": key, "size": len(data), "eTag": done["ETag"].strip('"'),
                                           "versionId": done["VersionId"], "sequencer": "0A"}}}]}


def order(order_id: str = "A-1001", cents: int = 1250, **more: Any) -> dict[str, Any]:
    return {"order_id": order_id, "amount_cents": cents, "currency": "usd", **more}


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    return keyed.lambda_handler(event, Context())


def statuses(result: dict[str, Any]) -> list[str]:
    return [str(p["status"]) for p in result["processed"]]


def record(account: str, order_id: str) -> dict[str, Any]:
    """The order's record (its ledger line once done), attribute values as text."""
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=TABLE, Key={"pk": {"S": order_key(account, order_id)}}, ConsistentRead=True).get("Item") or {}
    return {name: next(iter(value.values())) for name, value in item.items()}


# -- one succeeded charge per (account, order), over its life ------------------------------------------
def test_an_order_is_charged_once_to_the_linked_customer_however_often_it_arrives(fake: FakeStripe) -> None:
    event = put("alice/order.json", order())
    again = put("alice/order.json", order())  # the uploader's retried PUT: a second version
    assert statuses(invoke(event)) == ["charged"]
    assert statuses(invoke(event)) == ["duplicate"] and statuses(invoke(again)) == ["duplicate"]
    (charge,) = fake.intents
    assert (charge["amount"], charge["currency"], charge["customer"]) == (1250, "usd", "cus_alice")
    assert charge["metadata"]["idem_account"] == "alice"
    line = record("alice", "A-1001")
    assert line["status"] == "done" and line["charge_id"] == charge["id"] and line["cents"] == "1250"


def test_two_accounts_orders_with_one_id_are_two_charges(fake: FakeStripe) -> None:
    assert statuses(invoke(put("alice/order.json", order()))) == ["charged"]
    assert statuses(invoke(put("bob/order.json", order()))) == ["charged"]
    assert sorted(c["customer"] for c in fake.intents) == ["cus_alice", "cus_bob"]


def test_an_answer_lost_after_the_charge_is_replayed_not_charged_again(fake: FakeStripe) -> None:
    event = put("alice/order.json", order())
    fake.next_faults = ["", "lost_after"]  # the customer's read answers; the charge's answer is lost
    with pytest.raises(stripe.APIConnectionError):
        invoke(event)
    assert len(fake.intents) == 1 and record("alice", "A-1001")["status"] == "in_progress"
    assert statuses(invoke(event)) == ["charged"]  # Lambda's retry: the same key replays the charge
    assert len(fake.intents) == 1 and record("alice", "A-1001")["charge_id"] == fake.intents[0]["id"]


def test_the_same_order_under_another_name_after_a_failed_attempt_sends_the_same_parameters(
        fake: FakeStripe) -> None:
    fake.next_faults = ["", "lost_after"]
    with pytest.raises(stripe.APIConnectionError):
        invoke(put("alice/order.json", order()))
    # the same order, re-sent under another file name: the first attempt's reference and metadata
    assert statuses(invoke(put("alice/order-resent.json", order()))) == ["charged"]
    (charge,) = fake.intents
    assert charge["metadata"]["key"] == "alice/order.json"
    assert record("alice", "A-1001")["status"] == "done"


def test_past_the_key_window_the_charge_is_searched_for_not_made_again(fake: FakeStripe) -> None:
    start = time.time()
    clock = [start]
    fake.next_faults = ["", "lost_after"]
    with pytest.raises(stripe.APIConnectionError):
        invoke(put("alice/order.json", order(), at=start))
    assert keyed._charger is not None
    keyed._charger.now = keyed._charger.ledger.now = lambda: clock[0]
    clock[0] = start + 25 * 3600  # a day later: Stripe pruned the key, the record still in_progress
    fake.prune_keys()
    assert statuses(invoke(put("alice/order.json", order(), at=clock[0]))) == ["found"]
    assert len(fake.intents) == 1 and record("alice", "A-1001")["charge_id"] == fake.intents[0]["id"]


# -- who pays and how much: the mapping and the file, within the settings, or parked ----------------
@pytest.mark.parametrize("account, body, reason", [
    ("alice", order(customer="cus_bob"), "a file never chooses who pays"),
    ("alice", {"order_id": "A-1001", "amount": 129900}, "unknown field 'amount'"),
    ("alice", {"order_id": "A-1001"}, "no amount_cents"),
    ("alice", order(cents=10_000_000), "above MAX_AMOUNT_CENTS"),
    ("alice", order(currency="eur"), "not in CURRENCIES"),
    ("carol", order(), "has no linked customer"),
])
def test_a_file_the_handler_cannot_trust_is_parked_never_charged(fake: FakeStripe, account: str,
                                                                  body: dict[str, Any], reason: str) -> None:
    with pytest.raises(NeedsAttention, match=reason):
        invoke(put(f"{account}/order.json", body))
    assert fake.intents == []


def test_a_duplicate_asking_another_amount_is_parked(fake: FakeStripe) -> None:
    invoke(put("alice/order.json", order()))
    with pytest.raises(NeedsAttention, match="charged 1250 already"):
        invoke(put("alice/order.json", order(cents=1300)))
    assert len(fake.intents) == 1


# -- answers by meaning -------------------------------------------------------------------------------
def test_a_decline_is_final(fake: FakeStripe) -> None:
    event = put("alice/order.json", order())
    fake.next_faults = ["", "decline"]
    assert statuses(invoke(event)) == ["declined"] and statuses(invoke(event)) == ["declined"]
    assert fake.intents == []


def test_a_refused_secret_key_fails_for_a_retry_and_is_never_parked(fake: FakeStripe) -> None:
    event = put("alice/order.json", order())
    fake.next_faults = ["401"]
    with pytest.raises(ProviderAuthFailed):
        invoke(event)
    assert keyed._charger is None  # the next invocation reads the secret again
    assert statuses(invoke(event)) == ["charged"] and len(fake.intents) == 1


# -- the event shapes: the stack's own, with or without keyed_event_shapes.py ----------------------------
def test_the_production_shape_s3_in_sqs_is_read_and_a_bad_message_alone_fails(fake: FakeStripe) -> None:
    good = {"messageId": "m-1", "eventSource": "aws:sqs", "body": json.dumps(put("alice/order.json", order()))}
    bad = {"messageId": "m-2", "eventSource": "aws:sqs", "body": "not json"}
    answer = invoke({"Records": [good, bad]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert len(fake.intents) == 1


def test_an_sns_message_is_read_only_with_keyed_event_shapes(fake: FakeStripe,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    sns = {"EventSource": "aws:sns", "Sns": {"Message": json.dumps(put("alice/order.json", order()))}}
    if (Path(keyed.__file__).parent / "keyed_event_shapes.py").exists():
        assert statuses(invoke({"Records": [sns]})) == ["charged"]
    else:  # dropped: refused, with a log line that says how to read it; never guessed at
        with pytest.raises(RecordsFailed):
            invoke({"Records": [sns]})
        assert "copy keyed_event_shapes.py" in capsys.readouterr().out and fake.intents == []


def test_no_secret_is_ever_logged(fake: FakeStripe, capsys: pytest.CaptureFixture[str]) -> None:
    invoke(put("alice/order.json", order()))
    assert "sk_test_FAKE" not in capsys.readouterr().out
    assert fake.secret.endswith("sk_test_FAKE")  # (the SDK did send it, to Stripe alone)


def test_the_modes_that_read_no_order_file_start_only_with_keyed_event_shapes() -> None:
    env = {"LEDGER_TABLE": TABLE, "ORDER_IDENTITY": "upload", "PRICE_PER_UPLOAD_CENTS": "500"}
    if (Path(keyed.__file__).parent / "keyed_event_shapes.py").exists():
        assert settings_from_env(env).price_per_upload_cents == 500
    else:  # dropped: the function refuses to start, saying which file reads the mode
        with pytest.raises(ConfigError, match="keyed_event_shapes.py"):
            settings_from_env(env)
