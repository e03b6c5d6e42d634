"""Wrong on AWS, in every run: keyed_books on DynamoDB's legacy `Expected`, whose booking is fenced on the
claim's state, but on a state the claim never has. The claim is put with `state: "claimed"`; the booking
update expects `{"state": {"Exists": True, "Value": "charging"}}` (a step that set "charging" before the
charge was removed, the fence kept), and reads a refused booking as "another copy booked it" and writes no
line. DynamoDB compares the value: "Use Value to specify a value that DynamoDB will compare against an
attribute. If the values match, then ExpectedAttributeValue evaluates to true and the conditional operation
succeeds"; with Exists true, "DynamoDB will check to see if that attribute value already exists in the
table. If it is found, then the operation succeeds. If it is not found, the operation fails with a
ConditionalCheckFailedException" (ExpectedAttributeValue, AWS's SDK reference:
https://docs.aws.amazon.com/goto/SdkForJava/dynamodb-2012-08-10/ExpectedAttributeValue). So on
DynamoDB every booking is refused, the line is never written, and the invocation succeeds: a charge with
no ledger line on the clean run. Must BREAK (silent_mismatch)."""
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
        try:  # only the attempt that moves the claim from "charging" to "booked" writes the line
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
                                 AttributeUpdates={"state": {"Value": {"S": "booked"}, "Action": "PUT"},
                                                   "charge_id": {"Value": {"S": charge.id}, "Action": "PUT"}},
                                 Expected={"state": {"Exists": True, "Value": {"S": "charging"}}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            continue  # another copy booked it
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                 "order": {"S": key}})
    return {"ok": True}
