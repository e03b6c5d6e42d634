"""Correct twin of file_customer_first.py: who pays is the customer linked to the account (the mapping);
a file that names a customer is accepted only when it names that same customer, else refused (it
fails, so the event reaches the failure queue), never charged (docs/money_contract.md section 2)."""
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
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                                   "Stripe may have pruned its key: a person must look") from None
        linked = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"account#{name.split('/', 1)[0]}"}},
                                   ConsistentRead=True).get("Item")
        if not linked:
            raise RuntimeError(f"account {name.split('/', 1)[0]} has no linked customer: run idem customers link")
        customer = linked["customer"]["S"]
        if order.get("customer", customer) != customer:
            raise RuntimeError(f"{name}: the file names customer {order['customer']!r}, but account "
                               f"{name.split('/', 1)[0]} is linked to {customer}: refused, not charged")
        charge = provider.charge(customer=customer, amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
