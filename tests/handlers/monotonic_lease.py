"""Wrong: a lease-based claim, "immune to wall-clock jumps": the lease is written as
time.monotonic() + 120 s (four times the function's 30 s timeout, so a live invocation never loses it)
and a copy may take the claim over only once `lease_until < time.monotonic()`. The charge is keyed by
the order; the commit writes one ledger line (its own new id) and marks the claim done, unfenced (as
short_lease.py, which holds with a lease of at least the timeout on time.time()). Must BREAK
(silent_mismatch: two ledger lines for one charge): time.monotonic()'s "reference point of the
returned value is undefined, so that only the difference between the results of two calls is valid"
(https://docs.python.org/3/library/time.html#time.monotonic), and each execution environment is a
process of its own (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html): a
value written by one and compared in another means nothing. A copy of the event that lands in an
environment whose clock is ahead by more than 120 s takes the live claim over at once, gets the same
charge replayed, and both invocations book a line."""
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
                      "lease_until": {"N": str(time.monotonic() + LEASE_SECONDS)}},
                ConditionExpression="attribute_not_exists(pk) OR (#s = :ip AND lease_until < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":ip": {"S": "in_progress"}, ":now": {"N": str(time.monotonic())}},
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
