"""Claims the order with a conditional PutItem (a lease as long as the invocation may run), then
charges and books. It reads every ConditionalCheckFailed as "another invocation has this order" and
returns success. BREAKS: when the claim's answer is lost, botocore sends the PutItem again (every
retry mode retries a read timeout: https://docs.aws.amazon.com/boto3/latest/guide/retries.html),
and the resend fails its condition on the claim its own first attempt stored: the order is never
charged and nothing fails (silent_loss). Its twin `claim_checks_owner` asks whose claim it is."""
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
            ExpressionAttributeValues={":busy": {"S": "in_progress"}, ":now": {"N": str(now)}})
        return True
    except dynamodb.exceptions.ConditionalCheckFailedException:
        return False  # someone else has it


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
