"""The twin of refund_on_books_failure: the same claim, charge, and refund when the books write fails,
but before booking a PaymentIntent it lists its refunds (https://docs.stripe.com/api/refunds/list, by
`payment_intent`). Stripe replays a key's first answer as it was saved ("saving the resulting status code
and body of the first request", https://docs.stripe.com/idempotency), so a retry's `succeeded` may be a
charge an earlier attempt refunded: then nothing is kept, nothing is booked, and the order is left to a
person (it fails, so the event reaches the failure queue). No money is kept without a ledger line and no
ledger line names money not kept. Correct verdict: HOLDS (its refunded orders fail visibly)."""
import hashlib
import json
import os
import sys
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
    key, now = f"{bucket}/{account}/order/{order['order_id']}", time.time()
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
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked") from None
    try:
        intent = stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
            confirm=True, off_session=True, metadata={"account": account, "order_id": order["order_id"]},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    if stripe.Refund.list(payment_intent=intent.id, limit=1).data:
        raise RuntimeError(f"{key}: {intent.id} was refunded by an earlier attempt; a person must charge it again")
    try:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": intent.id}})
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            raise RuntimeError(f"{key}: booked with another charge than {intent.id}") from None
        # the books did not take it: give the money back rather than keep an unbooked charge
        print(f"{key}: books failed ({error}); refunding {intent.id}", file=sys.stderr)
        stripe.Refund.create(payment_intent=intent.id, idempotency_key=f"refund-{intent.id}")
        raise
