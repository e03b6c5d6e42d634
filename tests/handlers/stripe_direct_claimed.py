"""Correct, and calls Stripe's SDK directly as most teams do (module-level api_key,
stripe.PaymentIntent.create with an idempotency key made from the account and the order the file
names), as stripe_direct does, but it claims the order first, keeping its first attempt's time, so an
order booked (or declined) is skipped however late it comes again, and one first attempted over 23
hours ago and never booked is left to a person (Stripe may prune a key "at least 24 hours old":
https://docs.stripe.com/idempotency). A decline (402, `stripe.CardError`) is that order's final
answer. The check aims the SDK at its loopback Stripe (it imports stripe): holds in every family
(stripe_direct, whose only guard is Stripe's key, breaks past its window)."""
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
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        charge_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    # one charge per ORDER (docs/one_charge_per_order.md); no version in the request: Stripe
    # compares a resent request's parameters, so a retried PUT must send the same ones
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    key, now = f"{bucket}/{name.split('/', 1)[0]}/order/{order['order_id']}", time.time()  # account and order
    try:  # claim the order first, keeping its first attempt's time
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = error.response.get("Item", {})
        if "charge_id" in item or "declined" in item:
            return  # booked or declined already: a copy, a retry, or the same order sent again
        if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                               "Stripe may have pruned its key: a person must look") from None
    try:
        intent = stripe.PaymentIntent.create(
            amount=500, currency="usd", payment_method="pm_card_visa", confirm=True, off_session=True,
            metadata={"account": "acct-1", "reference": f"{bucket}/{name}"},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        print(f"{key} declined: {error.code}")  # final: retrying would get the same answer
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    try:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": intent.id}})
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            raise RuntimeError(f"{key}: booked with another charge than {intent.id}") from None
        raise
