"""Correct: claims the order, charges it once (keyed by the order), books one ledger line, then marks
its record done, and the done record keeps the charge id too (as Powertools-style records keep their
result). Two items carry `charge_id` for ONE charge: the record and the line. HOLDS: the books are
judged per charge (each charge booked once), not by counting items that carry a charge id.
Written before docs/money_contract.md, it breaks only in the families that contract added
(tests/test_check_handlers.py: MERGED_CONTRACT): an order sent again past Stripe's 24-hour key
window is charged again (it never searches Stripe by key), and another account's order with the
same order id is never charged (it keys by bucket and order id, not by account)."""
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
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        done = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"record#{key}"}}, ConsistentRead=True)
        if done.get("Item", {}).get("status", {}).get("S") == "done":
            continue
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=f"order#{key}")
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{key}"}, "charge_id": {"S": charge.id},
                                                     "amount_cents": {"N": str(order["amount_cents"])}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already by an earlier attempt (the provider replayed the charge)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"record#{key}"}, "status": {"S": "done"},
                                                 "charge_id": {"S": charge.id}})
    return {"ok": True}
