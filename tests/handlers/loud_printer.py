"""Correct (keyed_books' charge and booking), and prints a 50 MB debug dump on every invocation,
as Lambda ships to CloudWatch and goes on: the check keeps the last lines and holds, in time."""
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]
DUMP = "debug " * 8_400_000  # about 50 MB


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    print(DUMP)
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        print(f"charged {key}")
    return {"ok": True}
