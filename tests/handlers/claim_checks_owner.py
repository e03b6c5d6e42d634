"""Correct twin of `claim_says_taken`: the same claim, charge and books, but a claim that fails its
condition asks whose claim it is (ReturnValuesOnConditionCheckFailure=ALL_OLD returns the item that
failed the condition: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html).
Its own claim, stored by the first attempt of a PutItem whose answer was lost and resent by botocore
(or by this invocation's earlier attempt: Lambda's retry keeps the request id), is its own to go on
with. HOLDS.
Written before docs/money_contract.md, it breaks only in the families that contract added
(tests/test_check_handlers.py: MERGED_CONTRACT): an order sent again past Stripe's 24-hour key
window is charged again (it never searches Stripe by key), and another account's order with the
same order id is never charged (it keys by bucket and order id, not by account)."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def claim(dynamodb, key, owner, lease_seconds):
    """True when this invocation may go on with the order."""
    now = int(time.time())
    try:
        dynamodb.put_item(
            TableName=TABLE,
            Item={"pk": {"S": f"claim#{key}"}, "owner": {"S": owner}, "status": {"S": "in_progress"},
                  "expires_at": {"N": str(now + lease_seconds)}},
            ConditionExpression="attribute_not_exists(pk) OR (#s = :busy AND expires_at < :now)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":busy": {"S": "in_progress"}, ":now": {"N": str(now)}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return True
    except dynamodb.exceptions.ConditionalCheckFailedException as failed:
        held = failed.response.get("Item", {})
        # ours (a resend of our own claim, or our own earlier attempt) and not finished: go on
        return held.get("owner", {}).get("S") == owner and held.get("status", {}).get("S") == "in_progress"


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = "order#" + hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        lease = context.get_remaining_time_in_millis() // 1000 + 1
        if not claim(dynamodb, key, context.aws_request_id, lease):
            print(json.dumps({"order": order["order_id"], "outcome": "taken by another invocation"}))
            continue
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already by an earlier attempt
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
                             UpdateExpression="SET #s = :done", ExpressionAttributeNames={"#s": "status"},
                             ExpressionAttributeValues={":done": {"S": "done"}})
    return {"ok": True}
