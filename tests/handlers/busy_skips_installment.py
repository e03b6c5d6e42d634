"""Wrong, on purpose: charges an order in two installments, each with its own key, and skips an
installment the provider answers "busy" (409 Conflict, 429 rate limit, 503), returning success.
The order ends with one charge where the clean run made two: nothing alerts."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
BUSY = (409, 429, 503)


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=obj["versionId"])["Body"].read())
        for installment in (1, 2):
            key = hashlib.sha256(f"{bucket}\n{order['order_id']}\n{installment}".encode()).hexdigest()
            try:
                charge = provider.charge(customer="acct-1", amount=250, currency="usd",
                                         reference=f"{bucket}/{name}", idempotency_key=key)
            except Exception as error:
                if getattr(error, "http_status", None) in BUSY:
                    continue  # the bug: "busy, try the next one", and this installment is never charged
                raise
            try:
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                                  ConditionExpression="attribute_not_exists(pk)")
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass
    return {"ok": True}
