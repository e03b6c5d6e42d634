"""Wrong: the claim (and Stripe's idempotency key) is per order and per ISO week
(`date.isocalendar()`), "so the orders table can be exported and purged week by week: a week is
far longer than any AWS retry window". Must BREAK: an order uploaded on a Sunday at 23:58 UTC whose
copy or retry comes after midnight meets a new ISO week (Monday starts it:
https://docs.python.org/3/library/datetime.html#datetime.date.isocalendar), a new claim and a new
Stripe key, and is charged again. Lambda retries a failed event one and two minutes later and keeps
it for up to six hours (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html);
S3 may deliver a copy a minute or more later
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html)."""
import hashlib
import json
import os
import time
from datetime import datetime, timezone
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def week_partition():
    iso = datetime.now(timezone.utc).date().isocalendar()
    return f"{iso[0]}-W{iso[1]:02d}"


def order_key(bucket, name, order):
    account = name.split("/", 1)[0]
    raw = f"{week_partition()}\n{bucket}\n{account}\n{order['order_id']}"
    return "charge#order#" + hashlib.sha256(raw.encode()).hexdigest()


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key, now = order_key(bucket, name, order), time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "week": {"S": week_partition()},
                                                     "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already this week
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
