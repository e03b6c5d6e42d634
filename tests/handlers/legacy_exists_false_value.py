"""Wrong on AWS, in every run: legacy_expected_claim, but its claim says "this pk, expected not to exist"
with both `Exists: False` and the `Value` it must not have. DynamoDB "returns a ValidationException if ...
Exists is false but you also provide a Value. (You cannot expect an attribute to have a value, while also
expecting it not to exist.)" (ExpectedAttributeValue, AWS's SDK reference:
https://docs.aws.amazon.com/goto/SdkForJava/dynamodb-2012-08-10/ExpectedAttributeValue). Every claim is
refused as invalid, the invocation fails on every attempt, and no order is ever charged: the clean run
fails. Must BREAK (failed_visibly on the clean run), as ddb_unused_value does."""
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
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              Expected={"pk": {"Exists": False, "Value": {"S": f"claim#{key}"}}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, ConsistentRead=True)["Item"]
            if claim.get("booked", {}).get("BOOL"):
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                                   "have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              Expected={"pk": {"Exists": False}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
