"""Correct, and threaded: keyed_books' claim, charge and booking (keyed by the account and the
order, an order already booked never charged again, one first attempted over 23 hours ago and never
booked left to a person), but the records of one event are charged in a ThreadPoolExecutor (as teams
speed up a batch). Calls made from the pool's threads are the invocation's boundaries: faults land
there and charges count for this upload. Must HOLD."""
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours: https://docs.stripe.com/idempotency


def make_provider():
    raise RuntimeError("the check replaces this")


def charge_once(provider, dynamodb, s3, record):
    bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
    name = unquote_plus(obj["key"])
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=obj["versionId"])["Body"].read())
    account = name.split("/", 1)[0]
    key = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
    now = time.time()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except dynamodb.exceptions.ConditionalCheckFailedException as taken:
        claim = taken.response.get("Item", {})
        if claim.get("booked", {}).get("BOOL"):
            return  # booked already: a copy, a retry, or the same order sent again
        if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                               "have pruned its key: a person must look") from None
    charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                             idempotency_key=key)
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked already: this is a retry of a charge the provider replayed
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                         ExpressionAttributeValues={":t": {"BOOL": True}})


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    with ThreadPoolExecutor(max_workers=4) as pool:
        for done in [pool.submit(charge_once, provider, dynamodb, s3, r) for r in event["Records"]]:
            done.result()  # an error in a worker is this invocation's error
    return {"ok": True}
