"""Wrong: futures_timeout_recharge's handler, its 8 s budget kept with a plain thread: the charge runs in a
`threading.Thread`, joined with `join(timeout=8)`; a thread still alive after it is given up and the charge sent
again under a fresh key suffix. Must BREAK (double_charge) when the provider answers slower than 8 s: "As
join() always returns None, you must call is_alive() after join() to decide whether a timeout happened"
(https://docs.python.org/3/library/threading.html#threading.Thread.join), and the abandoned thread's charge
goes through, so the second key charges again. The check said it held until a timed join was judged on the
virtual clock (idem.sim.runtime.on_lambda)."""
import hashlib
import json
import os
import time
import threading
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
CHARGE_BUDGET_S = 8
KEY_WINDOW_SECONDS = 23 * 3600


def make_provider():
    raise RuntimeError("the check replaces this")


def charge_within_budget(provider, order, reference, key):
    for attempt in range(2):
        answer = {}
        worker = threading.Thread(target=lambda k=f"{key}:{attempt}", into=answer: into.update(charge=provider.charge(
            customer="acct-1", amount=int(order["amount_cents"]), currency=order["currency"], reference=reference,
            idempotency_key=k)), daemon=True)
        worker.start()
        worker.join(timeout=CHARGE_BUDGET_S)
        if worker.is_alive():
            continue  # still running past the budget: abandoned, try again with a fresh key
        if "charge" not in answer:
            raise RuntimeError(f"{key}: the charge failed; Lambda retries with the same key")
        return answer["charge"]
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
