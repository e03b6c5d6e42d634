"""Wrong on AWS and on moto alike, in every run: legacy_fence_wrong_value written with a condition
expression. The claim is put with `state = "claimed"`; the booking is conditioned on `#s = :charging` (a
state no step writes any more) and a refused booking is read as "another copy booked it", so no ledger
line is ever written: "a conditional write succeeds only if the item attributes meet one or more expected
conditions. Otherwise, it returns an error"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html).
Every charge, on the clean run too, has no ledger line in LEDGER_TABLE, where the handler books. Must
BREAK (a charge with no ledger line: silent_mismatch)."""
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
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, ConsistentRead=True)["Item"]
            if claim["state"]["S"] == "booked":
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:  # only the attempt that moves the claim from "charging" to "booked" writes the line
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
                                 UpdateExpression="SET #s = :booked, charge_id = :c", ConditionExpression="#s = :charging",
                                 ExpressionAttributeNames={"#s": "state"},
                                 ExpressionAttributeValues={":booked": {"S": "booked"}, ":c": {"S": charge.id},
                                                            ":charging": {"S": "charging"}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            continue  # another copy booked it
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                 "order": {"S": key}})
    return {"ok": True}
