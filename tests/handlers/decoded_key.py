"""Right: it decodes the event's key with urllib.parse.unquote_plus before GetObject, as S3's event
carries it URL-encoded (a space as '+', a '+' as '%2B'). Otherwise undecoded_key, line for line."""
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
        bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
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
