"""Wrong: a claim that frees itself if it gets stuck. While an order is in progress its claim carries
a 36-hour TTL (`expires_at`), "longer than Lambda's 6 h and Stripe's 24 h"; once the charge is booked
the TTL is removed, so a booked order is remembered for ever. Otherwise as account_order.py (an
unbooked claim first attempted over 23 h ago raises: a person must look). Must BREAK (double_charge):
an order charged but never booked (the booking write failing on every attempt) ends in the failure
queue, which keeps it 4 days by default, up to 14 (MessageRetentionPeriod,
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html), and
an operator redrives it whenever they do. Redriven after 36 hours, the claim is gone (DynamoDB deletes
an expired item in the background:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html), the 23-hour
guard has nothing to read, and Stripe may have pruned the key once it is 24 hours old
(https://docs.stripe.com/idempotency): a second charge. Redriven a day later (within 36 hours), it
meets the guard and fails visibly, so only a later redrive shows it."""
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


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key, now = order_key(bucket, name, order), time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)},
                                                     "expires_at": {"N": str(int(now) + 36 * 3600)}},
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
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}},
                                 UpdateExpression="SET charge_id = :c REMOVE expires_at",  # booked: keep for ever
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
