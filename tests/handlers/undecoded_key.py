"""Wrong, as many published functions are: it passes the event's key to GetObject as it came. S3's
event carries the key URL-encoded, so any name with a space, a '+' or a non-ASCII letter is never
found (NoSuchKey), and that upload is never charged. Otherwise correct: keyed by the file's order_id."""
import hashlib
import json
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], record["s3"]["object"]["key"]  # not decoded
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
