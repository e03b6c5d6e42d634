"""Wrong: Powertools for AWS Lambda's idempotency, keyed on the object's key alone
(`event_key_jmespath="Records[0].s3.object.key"`, "the file is the order"), records kept the default
hour (`expires_after_seconds` 3600: https://docs.aws.amazon.com/powertools/python/latest/api_doc/idempotency/config).
A second order uploaded at the same name is a new object at that key (S3 keeps one object per key, or
a new version of it), and within the hour Powertools answers it with the first order's saved response:
the second order is never charged, nothing in the failure queue. Must BREAK (silent_loss), in the
overwrite family."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from aws_lambda_powertools.utilities.idempotency import (DynamoDBPersistenceLayer, IdempotencyConfig,
                                                         idempotent)

TABLE = os.environ["LEDGER_TABLE"]
persistence = DynamoDBPersistenceLayer(table_name=TABLE, key_attr="pk")
config = IdempotencyConfig(event_key_jmespath="Records[0].s3.object.key")


def make_provider():
    raise RuntimeError("the check replaces this")


@idempotent(persistence_store=persistence, config=config)
def lambda_handler(event, context):
    s3 = event["Records"][0]["s3"]
    bucket, name = s3["bucket"]["name"], unquote_plus(s3["object"]["key"])
    order = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key=name)["Body"].read())
    key = hashlib.sha256(f"{bucket}/{name.split('/', 1)[0]}/{order['order_id']}".encode()).hexdigest()
    charge = make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=name,
                                    idempotency_key=key)
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked by an attempt whose answer was lost
    return {"charge_id": charge.id}
