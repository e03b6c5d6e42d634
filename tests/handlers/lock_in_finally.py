"""Wrong, on purpose: a per-order lock taken with a conditional put and released in `finally`.
When the process is killed between the two (Lambda's timeout, out of memory, a crash), no
`finally` runs: the lock stays, and every retry skips the order as "busy" forever."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=obj["versionId"])["Body"].read())
        key = hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"lock#{key}"}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            print(f"order {order['order_id']} is busy: another invocation has it")
            continue
        try:
            charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                     idempotency_key=key)
            try:
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                                  ConditionExpression="attribute_not_exists(pk)")
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass
        finally:
            dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": f"lock#{key}"}})  # the bug: a kill skips it
    return {"ok": True}
