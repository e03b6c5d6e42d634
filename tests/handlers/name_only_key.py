"""Wrong: the key is the object's name only (bucket/key), with no version or eTag. A second upload
of the same name (a new order.csv) is taken for a duplicate of the first: the provider replays the
first charge and the ledger already holds its line, so the second order is never charged. Must
BREAK (silent_loss, "no charge for the upload"), which only a schedule with two uploads of one name
can show: with one upload per schedule this handler is keyed_books."""
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}"  # the bug: no version, no eTag
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
    return {"ok": True}
