"""Correct twin of tz_utcnow_window: keyed by account and order, a claim first, the charge under the order's key, one ledger line per charge.
The claim keeps the first attempt's time as an ISO string with its offset (`datetime.now(timezone.utc)`), and
the age is computed from aware datetimes, so the function's TZ setting changes nothing ("If the datetime
instance is aware ... the return value is ... since the epoch", https://docs.python.org/3/library/datetime.html#datetime.datetime.timestamp;
TZ may be set on Lambda: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars-runtime.html). An order
first attempted over 23 hours ago and never booked is left to a person (Stripe keeps a key "at least 24 hours":
https://docs.stripe.com/idempotency). Must HOLD, with or without --env TZ=America/Los_Angeles."""
import hashlib
import json
import os
import time
from datetime import datetime, timezone
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        try:
            dynamodb.put_item(TableName=TABLE,
                              Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"S": datetime.now(timezone.utc).isoformat()}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue
            age = time.time() - datetime.fromisoformat(claim["first_attempt_at"]["S"]).timestamp()
            if age > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted {age / 3600:.1f} h ago and never booked; a person must look")
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
