"""Right, though it waits longer than it may: stripe_direct_claimed (Stripe's SDK, a claim first keeping
the first attempt's time, a key per account and order, the charge booked on the claim once), plus its
own retry of the charge on a network or Stripe error: 5 tries, sleeping 4, 8, 16 and 32 s between them,
never asking `context.get_remaining_time_in_millis()`. Lambda stops an invocation at its timeout (30 s
by default; "the amount of time that Lambda allows a function to run before stopping it":
https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html), so the third sleep never ends
there: the invocation times out and Lambda retries the event, which resends the same key and replays
(https://docs.stripe.com/idempotency). Must HOLD: a timeout is a crash it is built for."""
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


def create_with_retries(key, **params):
    for attempt in range(5):
        try:
            return stripe.PaymentIntent.create(idempotency_key=key, **params)
        except (stripe.APIConnectionError, stripe.APIError) as error:
            if attempt == 4:
                raise
            print(f"Stripe {type(error).__name__}, trying again in {4 * 2 ** attempt} s")
            time.sleep(4 * 2 ** attempt)


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    key, now = f"{bucket}/{name.split('/', 1)[0]}/order/{order['order_id']}", time.time()
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
        intent = create_with_retries(hashlib.sha256(key.encode()).hexdigest(), amount=500, currency="usd",
                                     payment_method="pm_card_visa", confirm=True, off_session=True,
                                     metadata={"account": "acct-1", "reference": f"{bucket}/{name}"})
    except stripe.CardError as error:
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
