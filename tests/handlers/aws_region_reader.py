"""Correct, and reads what Lambda sets before any code runs (AWS_REGION, the function's name,
LAMBDA_TASK_ROOT, _HANDLER) at cold start, as teams do: it must run (and hold), not exit 2."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

REGION = os.environ["AWS_REGION"]
FUNCTION = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
MEMORY_MB = int(os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
ROOT = os.environ["LAMBDA_TASK_ROOT"]
assert os.environ["_HANDLER"] == "aws_region_reader.lambda_handler", os.environ["_HANDLER"]
assert os.environ["AWS_EXECUTION_ENV"].startswith("AWS_Lambda_python3")
assert os.path.isfile(os.path.join(ROOT, "aws_region_reader.py")), ROOT
TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb", region_name=REGION)
    s3 = boto3.client("s3", region_name=REGION)
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        # one charge per ORDER (docs/one_charge_per_order.md): the exact version's order_id is the key
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id},
                                                     "by": {"S": f"{FUNCTION}@{REGION}/{MEMORY_MB}"}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
    return {"ok": True}
