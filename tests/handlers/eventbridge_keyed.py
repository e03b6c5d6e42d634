"""Right: an EventBridge-fed handler (S3 -> EventBridge `Object Created` -> Lambda, invoked
asynchronously). The idempotency key is made from the object's version, so EventBridge's copy
and Lambda's retry replay the first charge; the ledger line is a conditional put.
Must HOLD under --trigger eventbridge."""
import hashlib
import os

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    detail = event["detail"]  # EventBridge's key is not URL-encoded
    source = f"s3://{detail['bucket']['name']}/{detail['object']['key']}#{detail['object']['etag']}"  # the order's content (docs/one_charge_per_order.md)
    key = hashlib.sha256(source.encode()).hexdigest()
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source,
                                 idempotency_key=key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:
            return {"status": "declined"}  # a final answer, not a failure to retry
        raise
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
    return {"status": "charged"}
