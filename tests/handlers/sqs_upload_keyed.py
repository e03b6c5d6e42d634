"""Wrong: an SQS-fed handler (S3 -> SQS -> Lambda, ReportBatchItemFailures on) keyed per UPLOAD.
Each message is charged with an idempotency key made from the object's version, so a redelivered
message or a retried batch replays the first charge, but the uploader's retried PUT of the same
order (same name, same bytes, a new version) is a new key: the order is charged twice
(docs/one_charge_per_order.md). Must BREAK under --trigger sqs with double_charge on that schedule."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                charge_once(provider, dynamodb, record["s3"])
        except Exception as error:  # this message only: the others are done
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}


def charge_once(provider, dynamodb, s3):
    name = unquote_plus(s3["object"]["key"])
    source = f"s3://{s3['bucket']['name']}/{name}?versionId={s3['object']['versionId']}"
    key = hashlib.sha256(source.encode()).hexdigest()
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source,
                                 idempotency_key=key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:
            return  # declined: a final answer, not a failure to retry
        raise
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # booked already (a redelivery) is fine; anything else fails the message
