"""Wrong: the charge runs on a thread pool with an 8 s budget (`future.result(timeout=8)`); past it the
handler "cancels" the future and charges again under a fresh key suffix. Must BREAK (double_charge) when the
provider answers slower than 8 s: Future.cancel() cannot stop a call already running ("If the call is
currently being executed ... then the method will return False",
https://docs.python.org/3/library/concurrent.futures.html#concurrent.futures.Future.cancel), so the first
charge goes through and the second key charges again. The claim and the 23-hour guard are keyed_books'.
The check said it held until a slow call's time reached the handler's own waits
(idem.sim.runtime.on_lambda.waits_on_clock): the slow call moved the virtual clock, the future was done in
real time at once, and the wait never timed out."""
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
CHARGE_BUDGET_S = 8
KEY_WINDOW_SECONDS = 23 * 3600
_POOL = ThreadPoolExecutor(max_workers=2)


def make_provider():
    raise RuntimeError("the check replaces this")


def charge_within_budget(provider, order, reference, key):
    for attempt in range(2):
        future = _POOL.submit(provider.charge, customer="acct-1", amount=int(order["amount_cents"]),
                              currency=order["currency"], reference=reference, idempotency_key=f"{key}:{attempt}")
        try:
            return future.result(timeout=CHARGE_BUDGET_S)
        except FuturesTimeout:
            future.cancel()  # abandoned: try again with a fresh key
    raise RuntimeError(f"{key}: provider too slow")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago; a person must look") from None
        charge = charge_within_budget(provider, order, f"{bucket}/{name}", key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
