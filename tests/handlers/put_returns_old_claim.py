"""Wrong: the claim is a PutItem with ReturnValues="ALL_OLD" and no condition ("the put is atomic, and
only the first writer gets no old item back"). Atomic it is, but a retry is a writer too: botocore sends
the same put again when its answer is lost (its legacy mode retries "General socket/connection errors
... ReadTimeoutError": https://docs.aws.amazon.com/boto3/latest/guide/retries.html), and Lambda retries an
invocation that failed after the put; each gets back the item its own first attempt wrote, takes it for
another invocation's claim, and skips the order. Must BREAK in the faults family (silent_loss)."""
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
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        old = dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}},
                                ReturnValues="ALL_OLD").get("Attributes")
        if old:
            continue  # someone else has this order
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
    return {"ok": True}
