"""Correct: batch_get_skips_unlinked, reading what BatchGetItem leaves in UnprocessedKeys again with a
backoff ("If DynamoDB returns any unprocessed items, you should retry the batch operation on those
items. However, we strongly recommend that you use an exponential backoff algorithm":
https://docs.amazonaws.cn/sdkfornet/v3/apidocs/items/DynamoDBv2/MIDynamoDBBatchGetItemBatchGetItemRequest.html),
failing the invocation when they stay unread. Must HOLD in the runs family.

What it fixes: linked_customer, but the order's claim and the account's customer mapping are read in one
BatchGetItem ("one round trip"), and an account whose mapping is not in `Responses` is taken for an
account not onboarded yet and skipped, as test uploads are. BatchGetItem "returns a partial result if
the response size limit is exceeded, the table's provisioned throughput is exceeded, more than 1MB per
partition is requested, or an internal processing failure occurs. If a partial result is returned, the
operation returns a value for UnprocessedKeys" and "completes successfully"
(https://docs.amazonaws.cn/sdkfornet/v3/apidocs/items/DynamoDBv2/MIDynamoDBBatchGetItemBatchGetItemRequest.html):
a mapping left unprocessed is read as no mapping, and the order is never charged, with nothing failing."""
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


def read_both(dynamodb, key, account):
    """The order's claim and the account's mapping, in one request."""
    found, wanted = {}, {TABLE: {"Keys": [{"pk": {"S": key}}, {"pk": {"S": f"account#{account}"}}],
                                 "ConsistentRead": True}}
    for wait in (0.05, 0.1, 0.2, 0.4, 0.8):
        got = dynamodb.batch_get_item(RequestItems=wanted)
        found.update({item["pk"]["S"]: item for item in got["Responses"].get(TABLE, [])})
        wanted = got.get("UnprocessedKeys") or {}
        if not wanted:
            return found
        time.sleep(wait)
    raise RuntimeError(f"{key}: DynamoDB left keys unread: {wanted}")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        found = read_both(dynamodb, key, account)
        if "charge_id" in found.get(key, {}):
            continue  # booked already
        linked = found.get(f"account#{account}")
        if linked is None:
            print(f"account {account} is not onboarded yet: skipping {name}")
            continue
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; a person must look") from None
        charge = provider.charge(customer=linked["customer"]["S"], amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
