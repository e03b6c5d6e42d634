"""Wrong for orders: the charge's idempotency key is the bucket and the event's `sequencer` ("S3's own
id for each change: a duplicate notification carries the same one"). True for S3's duplicate and for
Lambda's retries, which carry the same event; but the uploader's retried PUT of the same order is a
new change of the object with a new, greater sequencer ("The sequencer key provides a way to determine
the sequence of events ... for PUTs and DELETEs on the same object":
https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html), so the same
order is charged twice (docs/one_charge_per_order.md). Must BREAK (double_charge), in the overwrite
family."""
import os

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}#{s3['object']['sequencer']}"
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=s3["object"]["key"],
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
    return {"ok": True}
