"""Wrong: futures_timeout_recharge's handler, its 8 s budget kept with `concurrent.futures.wait` instead of
`future.result(timeout=8)`: a charge still in `not_done` at the deadline is given up and charged again under a
fresh key suffix. Must BREAK (double_charge) when the provider answers slower than 8 s: wait "returns a named
2-tuple of sets" whose `not_done` holds the futures unfinished at the timeout
(https://docs.python.org/3/library/concurrent.futures.html#concurrent.futures.wait), and a call already
running cannot be cancelled, so the first charge goes through and the second key charges again. The check
said it held until `wait` judged its futures on the virtual clock (idem.sim.runtime.on_lambda)."""
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor, wait
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
        done, _ = wait([future], timeout=CHARGE_BUDGET_S)
        if future in done:
            return future.result()
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
