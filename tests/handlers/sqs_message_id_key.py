"""Wrong, on purpose, under --trigger sqs: keyed by the SQS messageId. SQS's own redelivery keeps the
id, but S3 delivering one upload's notification twice puts two messages in the queue, two ids:
two charges for one order."""
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                name = unquote_plus(record["s3"]["object"]["key"])
                key = "msg#" + message["messageId"]  # the bug
                charge = provider.charge(customer="acct-1", amount=500, currency="usd",
                                         reference=f"{record['s3']['bucket']['name']}/{name}", idempotency_key=key)
                try:
                    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                                      ConditionExpression="attribute_not_exists(pk)")
                except dynamodb.exceptions.ConditionalCheckFailedException:
                    pass
        except Exception:
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}
