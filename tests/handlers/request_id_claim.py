"""Wrong: the charge's idempotency key and its ledger line are keyed by `context.aws_request_id`
("the identifier of the invocation request": https://docs.aws.amazon.com/lambda/latest/dg/python-context.html).
Lambda's own retries of an asynchronous event keep it, so those replay the charge; but S3 delivers a
notification at least once (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html),
and each delivery is a new asynchronous invocation with a new request id: a second key, a second
charge. Must BREAK (double_charge)."""
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        name = unquote_plus(record["s3"]["object"]["key"])
        key = f"req#{context.aws_request_id}#{name}"
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=name, idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # a retry of this invocation: booked already
    return {"ok": True}
