"""Wrong: a dedup record with a 25-hour TTL (`expires_at`, the table's TTL attribute): "Stripe forgets
its idempotency keys after 24 h anyway, so keeping our claim 25 h covers every retry AWS can make
(6 h)". Otherwise as account_order.py: a claim per bucket, account and order id, the charge under
that key, booked on the claim, an unbooked claim over 23 h old left to a person. Must BREAK where
days pass: DynamoDB deletes an expired item in the background, "typically within a few days"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html), so the
same order sent again days later (uploaded again, or redriven from the failure queue) finds no
claim, and Stripe may have pruned the key once it is 24 hours old
(https://docs.stripe.com/idempotency): a second charge. Deployed with its template
(ttl_25_hours.yaml, TimeToLiveSpecification on `expires_at`), its table deletes the same way."""
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
                                                     "expires_at": {"N": str(int(now) + 25 * 3600)}},
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
