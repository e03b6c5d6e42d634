"""Correct, written with Powertools for AWS Lambda's idempotency utility: the whole handler is
idempotent on (bucket, name, version), the provider gets the same key, and the line is booked
once. Powertools builds its own boto3 session and reads datetime.now() for its in-progress
expiry: the check must watch both. Must HOLD; a crash after the charge, retried 60 s later, is
exactly_once (the record's in-progress expiry, 30 s from the remaining time, has passed)."""
import hashlib
import os

import boto3
from aws_lambda_powertools.utilities.idempotency import (DynamoDBPersistenceLayer, IdempotencyConfig,
                                                         idempotent)

TABLE = os.environ["LEDGER_TABLE"]
persistence = DynamoDBPersistenceLayer(table_name=TABLE, key_attr="pk")
config = IdempotencyConfig(event_key_jmespath="Records[0].s3.[bucket.name, object.key, object.eTag]")  # one per order (docs/one_charge_per_order.md)


def make_provider():
    raise RuntimeError("the check replaces this")


@idempotent(persistence_store=persistence, config=config)
def lambda_handler(event, context):
    s3 = event["Records"][0]["s3"]
    upload = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['eTag']}"  # the order's content: same bytes, same order
    key = hashlib.sha256(upload.encode()).hexdigest()  # Stripe keys: at most 255 characters
    charge = make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=upload,
                                    idempotency_key=key)
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked by an attempt whose answer was lost
    return {"charge_id": charge.id}
