"""Wrong: a dedup record that expires after 15 minutes ("S3's duplicates come within seconds").
It is account_order.py (a claim keyed by account and order, the charge under that key, the charge
booked on the claim once), but its claim is taken over, and written anew, once 15 minutes old: the
first attempt's time and the booked charge go with it. Must BREAK: AWS documents copies much later.
S3 delivers at least once, "typically ... in seconds but can sometimes take a minute or longer"
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html); Lambda keeps an event,
and may hand it over again, for up to six hours
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html); an event sent again
from the failure queue, or the same order uploaded again, a day later finds Stripe's key pruned ("at
least 24 hours old", https://docs.stripe.com/idempotency), so the order is charged twice. Within
Stripe's window the key replays the charge, so only the families where time passes show it."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours
DEDUP_SECONDS = 15 * 60


def make_provider():
    raise RuntimeError("the check replaces this")


def order_key(bucket, name, order):
    account = name.split("/", 1)[0]
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key, now = order_key(bucket, name, order), time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)},
                                                     "expires_at": {"N": str(now + DEDUP_SECONDS)}},
                              ConditionExpression="attribute_not_exists(pk) OR expires_at < :now",
                              ExpressionAttributeValues={":now": {"N": str(now)}},
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                                   "Stripe may have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
