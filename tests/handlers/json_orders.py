"""Correct for the files it is written for: it charges the order a `.json` file under `incoming/`
names (amount and customer from the file), keyed by the order, and skips any other file with a log
line, as a team whose orders land in one folder writes it. Fed the check's default object
(`checkNNNNN/order-1.json`, no folder `incoming/`) it makes no charge, and the check says what it
returned and printed (exit 2); fed `--object tests/handlers/orders/A-1001.json=incoming/A-1001.json`
it holds."""
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    s3, dynamodb = boto3.client("s3"), boto3.client("dynamodb")
    done = []
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
        if not (key.startswith("incoming/") and key.endswith(".json")):
            print(f"skipped {key}: not an order file in incoming/")
            continue
        # the upload this event is about, not the latest: its version, or (unversioned) its eTag
        version, etag = record["s3"]["object"].get("versionId"), record["s3"]["object"]["eTag"]
        read = s3.get_object(Bucket=bucket, Key=key, **({"VersionId": version} if version else {"IfMatch": etag}))
        order = json.loads(read["Body"].read())
        charge = make_provider().charge(customer=order["customer"], amount=order["amount_cents"],
                                        currency=order["currency"], reference=order["order_id"],
                                        idempotency_key=f"order#{order['order_id']}")
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": order["order_id"]}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        done.append(order["order_id"])
    return {"charged": done}
