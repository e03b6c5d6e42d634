"""Keyed by account and order, a claim first, the charge under the order's key, one ledger line per charge.
The claim keeps the first attempt's time as an ISO string in UTC (`datetime.utcnow().isoformat()`, "always
store UTC"), and an order first attempted over 23 hours ago and never booked is left to a person, since Stripe
may have pruned its key ("at least 24 hours old": https://docs.stripe.com/idempotency). The age is computed as
`time.time() - datetime.fromisoformat(first).timestamp()`.

Deployed with the function's TZ set to the team's zone (TZ=America/Los_Angeles: TZ is not reserved on Lambda and
"can be extended in your function configuration", https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars-runtime.html),
a naive datetime's `.timestamp()` is read as LOCAL time ("Naive datetime instances are assumed to represent
local time", https://docs.python.org/3/library/datetime.html#datetime.datetime.timestamp; utcnow's own warning:
"naive datetime objects are treated by many datetime methods as local times"). The stored UTC wall time read as
Pacific time is 8 hours late, so every age is 8 hours short: an order charged, never booked, and redriven a day
later looks 16 hours old and is charged again after Stripe dropped the key. With TZ UTC (Lambda's default) it
holds; with --env TZ=America/Los_Angeles it must BREAK (double_charge in the `again` family)."""
import hashlib
import json
import os
import time
from datetime import datetime
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
                              Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"S": datetime.utcnow().isoformat()}},
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
