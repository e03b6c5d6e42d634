"""Correct twin of legacy_fence_wrong_value: the booking is fenced on the state the claim really writes
(`{"state": {"Exists": True, "Value": "claimed"}}`), so only an attempt that finds the claim unbooked moves
it to "booked"; the line is keyed by the charge id, written by that attempt. A crash between the booking
and the line leaves a booked claim with no line, so the line is written BEFORE the booking here. Must HOLD."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


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
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "state": {"S": "claimed"},
                                                     "first_attempt_at": {"N": str(now)}},
                              Expected={"pk": {"Exists": False}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, ConsistentRead=True)["Item"]
            if claim["state"]["S"] == "booked":
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                 "order": {"S": key}})  # the same item for every attempt of the charge
        try:  # move the claim from "claimed" to "booked"
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
                                 AttributeUpdates={"state": {"Value": {"S": "booked"}, "Action": "PUT"},
                                                   "charge_id": {"Value": {"S": charge.id}, "Action": "PUT"}},
                                 Expected={"state": {"Exists": True, "Value": {"S": "claimed"}}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            continue  # another copy booked it
    return {"ok": True}
