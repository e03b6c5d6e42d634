"""Authorize, book, then capture in the same invocation: the team switched to manual capture so that
a fraud rule could void an order before money moves, then kept the capture right here. It claims the
order, creates the PaymentIntent (capture_method=manual) under the order's key, books the ledger line,
and captures when the intent is waiting for it. The capture is treated as best effort: an error is
logged and the invocation returns (the line is booked, so no retry is wanted).

Wrong: a capture that fails (a lost connection, a 500, Stripe down) is never tried again, and "If the
authorization expires before you capture the funds, the funds are released and the payment status
changes to canceled" (5 to 7 days for card-not-present payments:
https://docs.stripe.com/payments/place-a-hold-on-a-payment-method), so the ledger keeps a line for
money never collected. Confirmed, a manual-capture PaymentIntent waits in requires_capture, not
succeeded (https://docs.stripe.com/payments/paymentintents/lifecycle, https://docs.stripe.com/payments/capture-later). idem check: breaks (silent_mismatch: "a ledger line with
no charge", e.g. a crash after the ledger write, whose retry finds the line booked)."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3
import stripe
from botocore.exceptions import ClientError

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        charge_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key = f"{bucket}/{account}/order/{order['order_id']}"
    idem = hashlib.sha256(key.encode()).hexdigest()
    now = time.time()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = error.response.get("Item", {})
        if "charge_id" in item or "declined" in item:
            return
        if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
    try:
        intent = stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
            confirm=True, off_session=True, capture_method="manual",
            metadata={"account": account, "order_id": str(order["order_id"])}, idempotency_key=idem)
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                         ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                         ExpressionAttributeValues={":c": {"S": intent.id}})
    if intent.status == "requires_capture":
        try:
            stripe.PaymentIntent.capture(intent.id, idempotency_key=idem + "-capture")
        except stripe.StripeError as error:  # best effort: the order is booked
            print(f"{key}: capture of {intent.id} failed: {error}")
