"""Wrong: monotonic_lease with time.perf_counter() in place of time.monotonic() (a team that read "use
perf_counter for timing"). Must BREAK (silent_mismatch: two ledger lines for one charge), as monotonic_lease
does: perf_counter's "reference point of the returned value is undefined, so that only the difference between
the results of two calls is valid", and since Python 3.13 it is the same clock as time.monotonic
(https://docs.python.org/3/library/time.html#time.perf_counter); each execution environment is a process of
its own (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). A lease written by one
environment and compared in another whose counter is ahead by more than 120 s is taken over while live, the
charge replayed, and both invocations book a line. The check said it held until time.perf_counter read each
environment's own virtual clock as time.monotonic does (idem.sim.runtime.on_lambda.as_lambda)."""
import hashlib
import json
import os
import time
import uuid
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def order_key(bucket, name, order):
    account = name.split("/", 1)[0]
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()


LEASE_SECONDS = 120.0


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = order_key(bucket, name, order)
        try:
            dynamodb.put_item(
                TableName=TABLE,
                Item={"pk": {"S": key}, "status": {"S": "in_progress"},
                      "lease_until": {"N": str(time.perf_counter() + LEASE_SECONDS)}},
                ConditionExpression="attribute_not_exists(pk) OR (#s = :ip AND lease_until < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":ip": {"S": "in_progress"}, ":now": {"N": str(time.perf_counter())}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            if taken.response.get("Item", {}).get("status", {}).get("S") == "done":
                continue  # done already
            raise RuntimeError(f"{key} is being worked on: let Lambda retry") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        dynamodb.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"line#{uuid.uuid4()}"},
                                                  "charge_id": {"S": charge.id}}}},
            {"Update": {"TableName": TABLE, "Key": {"pk": {"S": key}},
                        "UpdateExpression": "SET #s = :done",
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":done": {"S": "done"}}}}])
    return {"ok": True}
