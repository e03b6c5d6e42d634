"""Wrong: an EventBridge-fed handler whose idempotency key is the invocation's request id. Lambda
keeps the request id across its own retries, so those replay; but a copy EventBridge delivers
again is a new invocation with a new request id, and a new key charges again.
Must BREAK under --trigger eventbridge (double_charge)."""
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    detail = event["detail"]
    source = f"s3://{detail['bucket']['name']}/{detail['object']['key']}"
    charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source,
                             idempotency_key=context.aws_request_id)
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": context.aws_request_id}, "charge_id": {"S": charge.id}})
    return {"status": "charged"}
