"""Wrong: futures_timeout_recharge's handler, its 8 s budget kept with a module's thread pool answering into a
`queue.Queue` read with `get(timeout=8)`: a charge not answered by the deadline is given up and charged again
under a fresh key suffix. Must BREAK (double_charge) when the provider answers slower than 8 s: `get` "raises the
Empty exception if no item was available within that time" (https://docs.python.org/3/library/queue.html#queue.Queue.get),
and the abandoned call goes on, so the first charge goes through and the second key charges again. The check said
it held (and waited 8 s of real time whenever the charge failed) until Queue.get was judged on the virtual clock
(idem.sim.runtime.thread_waits)."""
import hashlib
import json
import os
import time
import queue
from concurrent.futures import ThreadPoolExecutor
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
        answers = queue.Queue()
        _POOL.submit(lambda k=f"{key}:{attempt}", answers=answers: answers.put(provider.charge(
            customer="acct-1", amount=int(order["amount_cents"]), currency=order["currency"], reference=reference,
            idempotency_key=k)))
        try:
            return answers.get(timeout=CHARGE_BUDGET_S)
        except queue.Empty:
            pass
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
