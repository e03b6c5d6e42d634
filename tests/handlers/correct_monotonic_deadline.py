"""Correct: account_order.py with a time budget measured on time.monotonic(): at the start it
computes the invocation's deadline from context.get_remaining_time_in_millis() ("the number of
milliseconds left before the execution times out":
https://docs.aws.amazon.com/lambda/latest/dg/python-context.html), and before charging, if fewer than
8 s are left (the S3 read was slow), it raises so Lambda retries the event rather than risk a timeout
between the charge and the booking. Monotonic time is only ever subtracted from monotonic time in the
same invocation ("only the difference between the results of two calls is valid":
https://docs.python.org/3/library/time.html#time.monotonic). Must HOLD: a raise is an error Lambda
retries (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), and an
event whose every attempt runs out of time fails visibly."""
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


def order_key(bucket, name, order):
    account = name.split("/", 1)[0]
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()


SAFETY_SECONDS = 8.0


def lambda_handler(event, context):
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000.0
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        if deadline - time.monotonic() < SAFETY_SECONDS:
            raise RuntimeError(f"{name}: too little time left to charge and book; let Lambda retry")
        key, now = order_key(bucket, name, order), time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
