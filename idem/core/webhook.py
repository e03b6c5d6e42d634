"""Stripe's webhooks, into the ledger: the function behind template.yaml's WebhookFunction URL.

Each event is verified with Stripe's SDK (`stripe.Webhook.construct_event`: the Stripe-Signature
header's HMAC-SHA256 of `timestamp.payload` under the endpoint's secret, and a 300 s tolerance:
https://docs.stripe.com/webhooks#verify-events), then handled once by its id: the workbook's own
lesson, applied again. Stripe sends an event more than once and in no set order ("Webhook endpoints
might occasionally receive the same event more than once"; "Stripe doesn't guarantee the delivery
of events in the order that they're generated": https://docs.stripe.com/webhooks#handle-duplicate-events).

One DynamoDB transaction writes the event's marker (`event#<id>`, only if absent) and its effect,
fenced on the state it changes, so an event is either handled with its effect or not at all:
- payment_intent.succeeded / payment_failed / canceled: the order's record (the key in the
  PaymentIntent's metadata), `pending` with this charge id, becomes `done` (booked: account,
  booked_at, booked_day: out of the index's `pending` partition) or `declined` (out of it; a hold
  expired or canceled is released:
  https://docs.stripe.com/api/payment_intents/cancel). A success is final and a failure is not
  (https://docs.stripe.com/payments/paymentintents/lifecycle): a success of the charge a record
  declined is booked; a failure or cancel leaves a done or declined record as it is (answered 200).
  A record not pending yet (the handler is still on it) answers 409: Stripe retries later
  ("Stripe attempts to deliver ... for up to three days");
- charge.refunded: `refund#<payment_intent>` holds the cents refunded so far (Stripe's own
  cumulative amount_refunded), raised only: a late or repeated event never lowers it;
- charge.dispute.created: `dispute#<id>` books the dispute.
Any other event, or one of another stack's PaymentIntents, is marked and answered 200.
"""
from __future__ import annotations

import base64
import json
import os
import time
from typing import Any, Callable, Mapping

import boto3
import stripe
from botocore.exceptions import ClientError

from .dynamo import from_item, to_item, values

#: the events that settle an order's pending charge: booked, or declined
SETTLES = ("payment_intent.succeeded", "payment_intent.payment_failed", "payment_intent.canceled")
HANDLED = SETTLES + ("charge.refunded", "charge.dispute.created")
#: An event marker outlives Stripe's three days of retries many times over (TTL: expires_at).
EVENT_TTL_SECONDS = 30 * 24 * 3600


class Retry(Exception):
    """The event cannot be handled yet (its order is still being charged): answer 409, Stripe retries."""


def answer(status: int, message: str) -> dict[str, Any]:
    """A Lambda function URL response (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html)."""
    return {"statusCode": status, "headers": {"content-type": "application/json"},
            "body": json.dumps({"message": message})}


def verified(body: str, signature: str, secret: str) -> Any:
    """The event, if Stripe signed this body with this secret; else ValueError (one line)."""
    if not signature:
        raise ValueError("no Stripe-Signature header: not sent by Stripe")
    try:
        stripe.Webhook.construct_event(body, signature, secret)  # raises unless Stripe signed it
    except stripe.SignatureVerificationError as forged:
        raise ValueError(f"signature refused: {str(forged)[:120]}") from None
    except ValueError as bad:
        raise ValueError(f"not a Stripe event: {str(bad)[:120]}") from None
    return json.loads(body)  # the verified payload, as plain JSON (the SDK's objects are not dicts)


class Books:
    """The ledger's side: one transaction per event (its marker and its effect)."""

    def __init__(self, dynamodb: Any, table: str, stack: str = "", now: Any = time.time) -> None:
        self.dynamodb, self.table, self.stack, self.now = dynamodb, table, stack, now

    def handle(self, event: Mapping[str, Any]) -> str:
        """Apply one verified event once; return what became of it."""
        event_id, kind = str(event["id"]), str(event["type"])
        obj = event["data"]["object"]
        effect, outcome = None, "ignored: not an event this stack books"
        if kind in SETTLES:
            effect, outcome = self._settle(obj, kind == "payment_intent.succeeded")
        elif kind == "charge.refunded":
            effect, outcome = self._refund(obj), "refund booked"
        elif kind == "charge.dispute.created":
            effect, outcome = self._dispute(obj), "dispute booked"
        marker: dict[str, dict[str, Any]] = {"Put": {"TableName": self.table, "ConditionExpression": "attribute_not_exists(pk)",
                          "Item": to_item({"pk": f"event#{event_id}", "kind": "stripe_event", "type": kind,
                                           "outcome": outcome, "received_at": self.now(),
                                           "expires_at": int(self.now()) + EVENT_TTL_SECONDS})}}
        try:
            self.dynamodb.transact_write_items(TransactItems=[marker] + ([effect] if effect else []))
        except ClientError as error:
            reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
            if not reasons or error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            if reasons[0] == "ConditionalCheckFailed":
                return "duplicate: handled already"
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":  # the effect is there already
                outcome = "already booked" if kind != "payment_intent.succeeded" else "settled already"
                marker["Put"]["Item"]["outcome"] = {"S": outcome}
                try:
                    self.dynamodb.transact_write_items(TransactItems=[marker])
                except ClientError as again:
                    if again.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                        raise
                    return "duplicate: handled already"
                return outcome
            raise
        return outcome

    def _settle(self, intent: Mapping[str, Any], succeeded: bool) -> tuple[dict[str, Any] | None, str]:
        metadata = intent.get("metadata") or {}
        key = str(metadata.get("idempotency_key") or "")
        if not key.startswith("charge#") or (self.stack and metadata.get("idem_stack") not in (self.stack, None)):
            return None, "ignored: not a charge of this stack"
        record = from_item(self.dynamodb.get_item(TableName=self.table, Key=to_item({"pk": key}),
                                                  ConsistentRead=True).get("Item")) or {}
        status, charge = str(record.get("status", "")), str(intent["id"])
        # A success is final; a failure is not (requires_payment_method may be confirmed again), so a success of the
        # charge a record declined is booked, and a failure or cancel never changes a done or declined record, nor a
        # pending one naming another charge (its own is still pending).
        # the charge the record names: a pending one's, or a declined one's result (off-session `requires_action`)
        named = str(record.get("charge_id") or (record.get("result") or {}).get("charge_id") or "")
        other_charge = named != charge
        if (status == "done" and not other_charge) or (not succeeded and (status in ("done", "declined")
                                                                           or status == "pending" and other_charge)):
            return {"ConditionCheck": {"TableName": self.table, "Key": to_item({"pk": key}),
                                       "ConditionExpression": "attribute_not_exists(pk)"}}, "settled already"
        if status not in ("pending", "declined") or other_charge:
            raise Retry(f"{key[:40]} is {status or 'absent'} (charge {named or '-'}), not "
                        f"pending with {charge}: retry later, or settle it by hand (idem settle --key {key[:40]})")
        now = self.now()
        if succeeded:
            update = ("SET #s = :done, account = :account, booked_at = :now, booked_day = :day, cents = :cents, "
                      "settled_by = :by, charge_id = :charge, currency = if_not_exists(currency, :currency), "
                      "customer = if_not_exists(customer, :customer)")  # a declined record may name neither
            terms = dict(done="done", account=str(metadata.get("idem_account") or metadata.get("account")
                                                   or intent.get("customer") or "unassigned"),
                         currency=str(intent.get("currency") or ""), customer=str(intent.get("customer") or ""),
                         now=now, day=time.strftime("%Y-%m-%d", time.gmtime(now)),
                         cents=int(intent.get("amount_received") or intent.get("amount") or 0))
        else:
            update, terms = "SET #s = :done, settled_by = :by REMOVE booked_day, booked_at", {"done": "declined"}
        return {"Update": {"TableName": self.table, "Key": to_item({"pk": key}), "UpdateExpression": update,
                           "ConditionExpression": "#s IN (:pending, :declined) AND (charge_id = :charge "
                                                  "OR #r.charge_id = :charge)",  # the fence: the charge it names
                           "ExpressionAttributeNames": {"#s": "status", "#r": "result"},
                           "ExpressionAttributeValues": values(**terms, pending="pending", declined="declined",
                                                               charge=charge,
                                                               by="stripe webhook")}}, (
            "booked" if succeeded else "declined")

    def _refund(self, charge: Mapping[str, Any]) -> dict[str, Any]:
        intent = str(charge.get("payment_intent") or charge["id"])
        return {"Update": {"TableName": self.table, "Key": to_item({"pk": f"refund#{intent}"}),
                           "UpdateExpression": "SET #s = :refunded, refunded_cents = :cents, refunded_charge = :pi, "
                                               "currency = :cur, refunded_at = :now",
                           "ConditionExpression": "attribute_not_exists(pk) OR refunded_cents < :cents",
                           "ExpressionAttributeNames": {"#s": "status"},
                           "ExpressionAttributeValues": values(refunded="refunded", pi=intent, now=self.now(),
                                                               cents=int(charge.get("amount_refunded") or 0),
                                                               cur=str(charge.get("currency", "")))}}

    def _dispute(self, dispute: Mapping[str, Any]) -> dict[str, Any]:
        return {"Put": {"TableName": self.table, "ConditionExpression": "attribute_not_exists(pk)",
                        "Item": to_item({"pk": f"dispute#{dispute['id']}", "kind": "dispute",
                                         "status": str(dispute.get("status", "")),
                                         "disputed_charge": str(dispute.get("payment_intent") or dispute.get("charge")),
                                         "cents": int(dispute.get("amount") or 0),
                                         "currency": str(dispute.get("currency", "")),
                                         "reason": str(dispute.get("reason", "")), "opened_at": self.now()})}}


def refused_signature_metric(function_name: str, now: float) -> dict[str, Any]:
    """One refused Stripe-Signature, as a CloudWatch Embedded Metric Format document (printed, one
    line): template.yaml's WebhookSignatureAlarm sums them. A wrong or rotated signing secret refuses
    every real event, and Stripe stops sending to an endpoint that keeps failing
    (https://docs.stripe.com/webhooks#retries): the books would fall behind in silence.
    EMF: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html"""
    return {"_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
                "Namespace": "Idem", "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": "WebhookSignatureRefused", "Unit": "Count"}]}]},
            "FunctionName": function_name, "WebhookSignatureRefused": 1}


def receive(request: Mapping[str, Any], secret: str, books: Books, function_name: str = "",
            reread: Callable[[], str] | None = None) -> dict[str, Any]:
    """One function URL request: verify, then handle once. A signature the cached secret refuses is
    tried once more under the secret read again (`reread`: a secret rotated since the container
    started); still refused, it is counted (refused_signature_metric). A request with no signature at
    all (a scanner) is only logged."""
    body = str(request.get("body") or "")
    if request.get("isBase64Encoded"):
        body = base64.b64decode(body).decode("utf-8")
    headers = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
    try:
        try:
            event = verified(body, headers.get("stripe-signature", ""), secret)
        except ValueError:
            fresh = reread() if reread and headers.get("stripe-signature") else secret
            if fresh == secret:
                raise
            event = verified(body, headers.get("stripe-signature", ""), fresh)
    except ValueError as refused:
        print(json.dumps({"level": "WARNING", "message": f"webhook refused: {refused}"}))
        if headers.get("stripe-signature"):
            print(json.dumps(refused_signature_metric(function_name, books.now())))
        return answer(400, str(refused))
    try:
        outcome = books.handle(event)
    except Retry as later:
        print(json.dumps({"level": "INFO", "message": str(later), "event": event["id"]}))
        return answer(409, str(later))
    print(json.dumps({"level": "INFO", "message": outcome, "event": event["id"], "type": event["type"]}))
    return answer(200, outcome)


_secret: str | None = None


def lambda_handler(request: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """What Lambda calls: the endpoint's signing secret from SSM (read once per container, and again
    when it refuses a signature: a secret rotated in Stripe and SSM is taken without a redeploy)."""
    global _secret

    def read() -> str:
        global _secret
        ssm = boto3.client("ssm")
        _secret = str(ssm.get_parameter(Name=os.environ["WEBHOOK_SECRET_PARAMETER"], WithDecryption=True)["Parameter"]["Value"])
        return _secret

    books = Books(boto3.client("dynamodb"), os.environ["LEDGER_TABLE"], os.environ.get("STACK_NAME", ""))
    return receive(request, _secret or read(), books, function_name=str(getattr(context, "function_name", "")),
                   reread=read)
