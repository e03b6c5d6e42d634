"""Correct: keyed_books' claim and charge, then the ledger line, the account's running balance (ADD) and the
claim's `booked` flag in ONE TransactWriteItems whose ClientRequestToken is the order's own (36 characters
of its key), with no condition: a copy that charged beside it (Stripe replays the charge) sends the same
transaction with the same token, and DynamoDB answers it without writing again: "multiple identical calls
have the same effect as one single call", for 10 minutes after the first completes
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html). Lambda's
retries (1 and 2 minutes) and every copy that comes later find the claim booked and skip. Must HOLD,
`--effect dynamodb:TransactWriteItems` included: the balance is added to once per order. A checker whose
DynamoDB ignores the token (moto) adds twice when two copies both charge."""
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
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                                   "have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        # one transaction per order: the token makes a second identical one (a copy's) a no-op
        dynamodb.transact_write_items(ClientRequestToken=key.rsplit("#", 1)[1][:36], TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": key}, "charge_id": {"S": charge.id}}}},
            {"Update": {"TableName": TABLE, "Key": {"pk": {"S": f"balance#{account}"}},
                        "UpdateExpression": "ADD cents :c", "ExpressionAttributeValues": {":c": {"N": "500"}}}},
            {"Update": {"TableName": TABLE, "Key": {"pk": {"S": f"claim#{key}"}},
                        "UpdateExpression": "SET booked = :t", "ExpressionAttributeValues": {":t": {"BOOL": True}}}},
        ])
    return {"ok": True}
