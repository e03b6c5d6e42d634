"""Half right: it decodes the event's key with urllib.parse.unquote, which turns '%2B' into '+' and
'%C3%BC' into 'ü' but leaves '+' as it is, where S3's event writes a space. Names with a '+' or a
non-ASCII letter are found; a name with a space is not (NoSuchKey). Otherwise undecoded_key."""
import hashlib
import json
import os
from urllib.parse import unquote

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], unquote(record["s3"]["object"]["key"])  # not unquote_plus
        order = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        idem_key = "charge#" + hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{key}",
                                 idempotency_key=idem_key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": idem_key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
    return {"ok": True}
