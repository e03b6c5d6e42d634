"""Wrong: an SQS-fed handler that catches a failed message, logs it and reports no failure, so the
event source mapping deletes the message: the upload is never charged and nothing alerts (the
dead-letter queue never sees it). Must BREAK under --trigger sqs (silent_loss)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                s3 = record["s3"]
                source = f"s3://{s3['bucket']['name']}/{unquote_plus(s3['object']['key'])}"
                source += f"?versionId={s3['object']['versionId']}"
                key = hashlib.sha256(source.encode()).hexdigest()
                charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source,
                                         idempotency_key=key)
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
        except Exception as error:
            print(f"{message['messageId']} failed, skipped: {error}")  # logged, and then forgotten
    return {"batchItemFailures": []}
