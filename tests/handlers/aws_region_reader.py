"""Correct, and reads what Lambda sets before any code runs (AWS_REGION, the function's name,
LAMBDA_TASK_ROOT, _HANDLER) at cold start, as teams do: it must run (and hold), not exit 2. Its
money is keyed_books': keyed by the account and the order, claimed first with the first attempt's
time, an order already booked never charged again, one first attempted over 23 hours ago and never
booked left to a person."""
import hashlib
import json
import os
import time
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
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours: https://docs.stripe.com/idempotency


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb", region_name=REGION)
    s3 = boto3.client("s3", region_name=REGION)
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        # one charge per ORDER (docs/one_charge_per_order.md): the account and the exact version's order_id
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                                   "have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id},
                                                     "by": {"S": f"{FUNCTION}@{REGION}/{MEMORY_MB}"}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
