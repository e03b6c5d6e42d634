"""Correct: legacy_expected_claim (keyed_books on DynamoDB's legacy `Expected`), whose claim also lets a
person release a parked order for one more attempt: the put succeeds when the order has no record (`pk` NULL), OR when
its record's status is "retry" (set by hand after looking at Stripe), and the charge key is the order's own,
so a released order's next attempt sends the same key (Stripe replays what was made:
https://docs.stripe.com/idempotency). ConditionalOperator OR: "If at least one of the conditions evaluates
to true, then the entire map evaluates to true"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.ConditionalOperator.html).
For a new order the first condition holds, so the claim is taken as keyed_books' is. Must HOLD."""
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
                              Expected={"pk": {"ComparisonOperator": "NULL"},
                                        "status": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "retry"}]}},
                              ConditionalOperator="OR")
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
