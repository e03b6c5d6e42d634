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
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"]).get("Records", []):
                bucket, name = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
                order = json.loads(s3.get_object(Bucket=bucket, Key=name)["Body"].read())
                key = hashlib.sha256(f"{bucket}/{order['order_id']}".encode()).hexdigest()
                charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency=order["currency"],
                                         reference=f"{bucket}/{name}", idempotency_key=key)
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
                s3.put_object(Bucket=bucket, Key=f"_done/{name}", Body=b"done")
        except Exception as error:  # this message only: the others are done
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}
