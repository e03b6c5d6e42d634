"""Calls Stripe's SDK directly after a claim keeping the first attempt's time, as stripe_direct_claimed
(key by account and order, a decline recorded as final). DEFECT: on Stripe's rate limit it answers
the way its API Gateway functions do, `{"statusCode": 429}`, and returns. Stripe answers 429 when
"too many requests hit the API too quickly" (https://docs.stripe.com/rate-limits), and asks the caller
to retry; but an S3-invoked Lambda that returns normally has succeeded: nothing retries it
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html retries only on an error). The
order is never charged, and its claim stays unbooked with no one told (silent loss)."""
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
    except stripe.RateLimitError:
        print(f"{key}: Stripe rate limited us, try again later")
        return {"statusCode": 429}
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
