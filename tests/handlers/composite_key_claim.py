"""Correct: keyed_books' claim, charge and one line per charge on a table with a composite primary key
(`pk` the order, `sk` "claim" or "line#<charge>"), the claim's condition naming the sort key:
`attribute_not_exists(sk)`. Any attribute of the key works: "The PutItem operation overwrites an item with the same
primary key (if it exists). If you want to avoid this, use a condition expression. This allows the write
to proceed only if the item in question does not already have the same primary key" (the condition is
evaluated on the one item with the put's whole primary key:
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.SpecifyingConditions.html).
The claim and the line share the partition key and differ by sort key. Must HOLD (as deployed from
tests/templates/adversary3.yaml, `CompositeKey`)."""
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
        key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "sk": {"S": "claim"},
                                                     "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(sk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if "booked" in claim:
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order.get("amount_cents", 500), currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "sk": {"S": f"line#{charge.id}"},
                                                     "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(sk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked by an attempt whose answer was lost
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}, "sk": {"S": "claim"}},
                             UpdateExpression="SET booked = :c", ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
