"""Correct, in another style: keyed_books' money (keyed by the account and the order, the charge under
the key, one ledger line per charge written once, an order booked never charged again, one first
attempted over 23 hours ago and never booked left to a person: Stripe may prune a key "at least 24
hours old", https://docs.stripe.com/idempotency), but the claim is one UpdateItem with
`if_not_exists(first_attempt_at, :now)` and ReturnValues=ALL_NEW, which answers the item as it is
after the update (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html):
no condition to fail, so botocore's resend of a lost answer, a retry and a copy all read the first
attempt's time back. It counts attempts (an ADD-like counter: not an effect the check is told to
count). Must HOLD."""
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
        # one call, whoever comes first: the first attempt's time is set once and read back
        claim = dynamodb.update_item(
            TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
            UpdateExpression="SET first_attempt_at = if_not_exists(first_attempt_at, :now), "
                             "attempts = if_not_exists(attempts, :zero) + :one",
            ExpressionAttributeValues={":now": {"N": str(now)}, ":zero": {"N": "0"}, ":one": {"N": "1"}},
            ReturnValues="ALL_NEW")["Attributes"]
        if claim.get("booked", {}).get("BOOL"):
            continue  # booked already: a copy, a retry, or the same order sent again
        if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                               "have pruned its key: a person must look")
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
