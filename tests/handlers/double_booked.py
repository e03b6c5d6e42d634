"""Wrong, on purpose: keyed_books, but every charge is booked twice (a line for the charge and a
line for the "payment"), both carrying charge_id. The books disagree with the money on a clean
run, with no fault at all: exit 1 with the clean run's timeline, never holds."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=obj["versionId"])["Body"].read())
        key = hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        for kind in ("charge", "payment"):
            try:
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"{key}#{kind}"}, "charge_id": {"S": charge.id}},
                                  ConditionExpression="attribute_not_exists(pk)")
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass
    return {"ok": True}
