"""Wrong: uses S3's conditional write as its lock: `PutObject(IfNoneMatch='*')` of a marker per order
("uploads the object only if the object key name does not already exist ... otherwise 412
Precondition Failed": https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html),
then the charge under the order's key, then the ledger line. A 412 is read as "another invocation has
this order" and the handler returns. When the charge fails after the marker landed (the provider down,
a timeout), Lambda's retry meets its own marker and returns success: the order is never charged and
nothing fails. Must BREAK (silent_loss)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

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
        key = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        try:
            s3.put_object(Bucket=bucket, Key=f"_markers/{key}", Body=b"", IfNoneMatch="*")
        except ClientError as error:
            if error.response["Error"]["Code"] in ("PreconditionFailed", "412"):
                print(f"{name}: order {order['order_id']} is taken")
                continue
            raise
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
    return {"ok": True}
