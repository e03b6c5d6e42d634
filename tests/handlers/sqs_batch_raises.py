"""Wrong: an SQS-fed handler that charges without an idempotency key, trusting its ledger to spot
a message it has seen, and books the batch's lines in one write at the end. When one message
fails it raises, so the whole batch comes back, and the messages charged before the failure, not
yet booked, are charged again. Must BREAK under --trigger sqs (double_charge of the neighbour)."""
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    lines = []
    for message in event["Records"]:
        for record in json.loads(message["body"])["Records"]:
            s3 = record["s3"]
            source = f"s3://{s3['bucket']['name']}/{unquote_plus(s3['object']['key'])}"
            source += f"?versionId={s3['object']['versionId']}"
            if "Item" in dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": source}}, ConsistentRead=True):
                continue  # booked already: a redelivery
            charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source)
            lines.append({"PutRequest": {"Item": {"pk": {"S": source}, "charge_id": {"S": charge.id}}}})
    if lines:
        dynamodb.batch_write_item(RequestItems={TABLE: lines})
    return {"batchItemFailures": []}
