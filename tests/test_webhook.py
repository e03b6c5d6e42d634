"""Stripe's webhooks reach the ledger (idem/core/webhook.py): events signed as Stripe signs them
(the Stripe-Signature header `t=<unix time>,v1=<hex HMAC-SHA256 of "t.payload" under the endpoint's
secret>`: https://docs.stripe.com/webhooks#verify-manually), verified by Stripe's SDK, handled
once by id, replayed, out of order and forged."""
from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import boto3
import pytest
from moto import mock_aws

from idem.core import webhook
from idem.core.dynamo import from_item, to_item

SECRET = "whsec_test_" + "ab" * 16
KEY = "charge#order#" + "cd" * 32


def signed(event: dict[str, Any], secret: str = SECRET, at: int | None = None) -> dict[str, Any]:
    """A function URL request carrying the event as Stripe sends it."""
    body = json.dumps(event)
    at = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{at}.{body}".encode(), hashlib.sha256).hexdigest()
    return {"body": body, "isBase64Encoded": False, "headers": {"Stripe-Signature": f"t={at},v1={mac}"}}


def intent_event(event_id: str, kind: str, pi: str = "pi_1", stack: str = "idem-prod") -> dict[str, Any]:
    return {"id": event_id, "object": "event", "type": kind, "api_version": "2024-06-20", "created": 1,
            "data": {"object": {"id": pi, "object": "payment_intent", "amount": 500, "amount_received": 500,
                                "currency": "usd", "customer": "cus_1", "status": kind.split(".")[1],
                                "metadata": {"idempotency_key": KEY, "idem_stack": stack, "idem_account": "alice"}}}}


def refund_event(event_id: str, refunded: int) -> dict[str, Any]:
    return {"id": event_id, "object": "event", "type": "charge.refunded", "created": 1,
            "data": {"object": {"id": "ch_1", "object": "charge", "payment_intent": "pi_1", "amount": 500,
                                "amount_refunded": refunded, "currency": "usd"}}}


@pytest.fixture
def books(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # moto in-process, whatever ran before
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        table = f"ledger-{uuid.uuid4().hex[:8]}"  # its own table: moto's state may outlive a test here
        client.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        yield webhook.Books(client, table, "idem-prod", now=lambda: 1_800_000_000.0)


def record(books: webhook.Books, key: str = KEY) -> dict[str, Any]:
    return from_item(books.dynamodb.get_item(TableName=books.table, Key=to_item({"pk": key})).get("Item")) or {}


def put(books: webhook.Books, **item: Any) -> None:
    books.dynamodb.put_item(TableName=books.table, Item=to_item({"pk": KEY, **item}))


def status_of(response: dict[str, Any]) -> tuple[int, str]:
    return response["statusCode"], json.loads(response["body"])["message"]


def test_a_processing_charge_that_succeeds_is_booked_once_and_its_replay_changes_nothing(books):
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")
    event = intent_event("evt_1", "payment_intent.succeeded")
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "booked")
    line = record(books)
    assert (line["status"], line["account"], line["cents"], line["booked_day"]) == ("done", "alice", 500, "2027-01-15")
    assert record(books, "event#evt_1")["outcome"] == "booked"
    # Stripe sends it again (the same id), and once more signed a minute later
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "duplicate: handled already")
    assert status_of(webhook.receive(signed(event, at=int(time.time()) - 60), SECRET, books))[0] == 200
    assert record(books) == line


def test_a_processing_charge_that_fails_is_declined_and_never_booked(books):
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")
    assert status_of(webhook.receive(signed(intent_event("evt_2", "payment_intent.payment_failed")), SECRET, books)) == (
        200, "declined")
    line = record(books)
    assert line["status"] == "declined" and "account" not in line and "booked_at" not in line


def test_an_event_before_its_order_is_pending_is_retried_by_stripe_and_then_booked(books):
    put(books, status="in_progress", owner="o1", lease_until=1_800_000_030)  # the handler is still charging
    event = intent_event("evt_3", "payment_intent.succeeded")
    code, message = status_of(webhook.receive(signed(event), SECRET, books))
    assert code == 409 and "retry later" in message
    assert record(books, "event#evt_3") == {}  # not marked: the retry is handled in full
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")  # the handler's commit
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "booked")
    assert record(books)["status"] == "done"


def test_a_success_the_handler_booked_already_is_marked_and_left_alone(books):
    put(books, status="done", charge_id="pi_1", cents=500, account="alice", booked_at=1.0)
    assert status_of(webhook.receive(signed(intent_event("evt_4", "payment_intent.succeeded")), SECRET, books)) == (
        200, "settled already")
    assert record(books)["booked_at"] == 1.0


def test_a_success_for_another_charge_of_the_order_is_not_booked_over_the_line(books):
    put(books, status="pending", charge_id="pi_other", cents=500)
    code, _ = status_of(webhook.receive(signed(intent_event("evt_5", "payment_intent.succeeded")), SECRET, books))
    assert code == 409 and record(books)["status"] == "pending"  # fenced on the charge id


def test_another_stacks_charge_is_ignored(books):
    assert status_of(webhook.receive(signed(intent_event("evt_6", "payment_intent.succeeded", stack="other")),
                                     SECRET, books)) == (200, "ignored: not a charge of this stack")
    assert record(books) == {}


def test_refunds_out_of_order_keep_the_larger_amount_stripe_reported(books):
    later, earlier = refund_event("evt_r2", 500), refund_event("evt_r1", 200)
    assert status_of(webhook.receive(signed(later), SECRET, books)) == (200, "refund booked")
    assert status_of(webhook.receive(signed(earlier), SECRET, books)) == (200, "already booked")
    assert status_of(webhook.receive(signed(later), SECRET, books)) == (200, "duplicate: handled already")
    line = record(books, "refund#pi_1")
    assert (line["status"], line["refunded_cents"], line["refunded_charge"]) == ("refunded", 500, "pi_1")


def test_a_dispute_is_booked_once(books):
    event = {"id": "evt_d", "object": "event", "type": "charge.dispute.created", "created": 1,
             "data": {"object": {"id": "dp_1", "object": "dispute", "charge": "ch_1", "payment_intent": "pi_1",
                                 "amount": 500, "currency": "usd", "reason": "fraudulent", "status": "needs_response"}}}
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "dispute booked")
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "duplicate: handled already")
    line = record(books, "dispute#dp_1")
    assert (line["disputed_charge"], line["cents"], line["reason"]) == ("pi_1", 500, "fraudulent")


@pytest.mark.parametrize("forge", ["other secret", "tampered body", "no header", "too old", "not json"])
def test_a_forged_or_stale_event_is_refused_and_nothing_is_written(books, forge):
    put(books, status="pending", charge_id="pi_1", cents=500)
    event = intent_event("evt_f", "payment_intent.succeeded")
    request = {"other secret": lambda: signed(event, secret="whsec_attacker"),
               "too old": lambda: signed(event, at=int(time.time()) - 3600),  # past the SDK's 300 s tolerance
               }.get(forge, lambda: signed(event))()
    if forge == "tampered body":
        request["body"] = request["body"].replace('"amount_received": 500', '"amount_received": 1')
    if forge == "no header":
        request["headers"] = {}
    if forge == "not json":
        request = signed({"id": "x"})
        request["body"] = "not json"
        request["headers"] = signed({"id": "x"})["headers"]
    code, message = status_of(webhook.receive(request, SECRET, books))
    assert code == 400 and message
    assert record(books)["status"] == "pending" and record(books, "event#evt_f") == {}


def test_the_module_stays_small_and_uses_stripes_sdk_to_verify():
    source = open(webhook.__file__).read()
    assert len(source.splitlines()) < 300 and "stripe.Webhook.construct_event" in source


def test_the_template_gives_stripe_a_url_and_the_function_only_the_keys_it_writes():
    from idem.deploy import template as tp

    given = {"AlarmEmail": "ops@example.com"}
    prod = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), given), given)
    fn = prod["Resources"]["WebhookFunction"]["Properties"]
    assert fn["Handler"] == "idem.core.webhook.lambda_handler"
    assert set(fn["Environment"]["Variables"]) == {"LEDGER_TABLE", "STACK_NAME", "WEBHOOK_SECRET_PARAMETER"}
    assert prod["Resources"]["WebhookFunctionUrl"]["Properties"]["AuthType"] == "NONE"  # Stripe signs, not AWS
    # "new function URLs will require both lambda:InvokeFunctionUrl and lambda:InvokeFunction"
    # (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html): SAM grants both, the second via the URL only
    granted = {p["Properties"]["Action"]: p["Properties"] for p in tp.resources_of_type(prod, "AWS::Lambda::Permission").values()
               if tp.ref_name(p["Properties"]["FunctionName"]) == "WebhookFunction"}
    assert granted["lambda:InvokeFunction"]["InvokedViaFunctionUrl"] is True and "lambda:InvokeFunctionUrl" in granted
    (ledger,) = [s for s in prod["Resources"]["WebhookFunctionRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
                 if s["Sid"] == "Ledger"]
    assert set(ledger["Action"]) == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"}
    assert ledger["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["event#*", "charge#*", "refund#*", "dispute#*"]
    demo = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), {"Profile": "demo"}), {"Profile": "demo"})
    assert not [n for n in demo["Resources"] if n.startswith("Webhook")]  # the demo has no Stripe


def _emf_lines(out: str) -> list[dict[str, Any]]:
    return [line for line in map(json.loads, filter(None, out.splitlines())) if "_aws" in line]


@pytest.mark.parametrize("forge, counted", [("other secret", 1), ("too old", 1), ("no header", 0)])
def test_a_signed_request_the_secret_does_not_verify_is_counted_for_the_signing_secret_alarm(books, capsys, forge, counted):
    """A wrong or rotated signing secret refuses every real event (Stripe retries, then disables the
    endpoint): each refused request that carries a Stripe-Signature header is one EMF count the
    template's WebhookSignatureAlarm reads. A request with no signature at all (a scanner) is not."""
    event = intent_event("evt_s", "payment_intent.succeeded")
    request = {"other secret": lambda: signed(event, secret="whsec_rotated"),
               "too old": lambda: signed(event, at=int(time.time()) - 3600)}.get(forge, lambda: signed(event))()
    if forge == "no header":
        request["headers"] = {}
    assert webhook.receive(request, SECRET, books, function_name="idem-prod-webhook")["statusCode"] == 400
    documents = _emf_lines(capsys.readouterr().out)
    if not counted:
        assert documents == []
        return
    (document,) = documents
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert (directive["Namespace"], directive["Dimensions"]) == ("Idem", [["FunctionName"]])
    assert directive["Metrics"] == [{"Name": "WebhookSignatureRefused", "Unit": "Count"}]
    assert (document["FunctionName"], document["WebhookSignatureRefused"]) == ("idem-prod-webhook", 1)


def test_the_signing_secret_alarm_reads_the_webhooks_count():
    from idem.deploy import template as tp

    given = {"AlarmEmail": "ops@example.com"}
    prod = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), given), given)
    alarm = prod["Resources"]["WebhookSignatureAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("Idem", "WebhookSignatureRefused", "Sum")
    assert tp.ref_name(alarm["Dimensions"][0]["Value"]) == "WebhookFunction"
    assert alarm["TreatMissingData"] == "notBreaching"


def test_a_rotated_signing_secret_is_read_again_before_an_event_is_refused(books, capsys):
    """The endpoint's secret rolled in Stripe and in SSM while a container holds the old one: the
    event is verified under the secret read again, booked, and nothing is counted as refused."""
    put(books, status="pending", charge_id="pi_1", cents=500)
    reads: list[str] = []
    request = signed(intent_event("evt_r", "payment_intent.succeeded"), secret="whsec_rolled")
    response = webhook.receive(request, SECRET, books, function_name="f",
                               reread=lambda: reads.append("ssm") or "whsec_rolled")
    assert response["statusCode"] == 200 and reads == ["ssm"] and record(books)["status"] == "done"
    assert _emf_lines(capsys.readouterr().out) == []
