"""Correct: keyed_books with its claims in a table of their own (ORDERS_TABLE) and the ledger line and the
claim's `booked` written in ONE TransactWriteItems over the two tables ("These actions can target items
in different tables ... The actions are completed atomically so that either all of them succeed, or
all of them fail": https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
The line is put only if absent; a transaction cancelled on that condition means a copy booked the same
charge (Stripe replayed it) and is done. Deployed by tests/templates/adversary_two_tables.yaml. Must HOLD."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
ORDERS = os.environ["ORDERS_TABLE"]  # the claims: one item per order
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=ORDERS, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
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
        try:  # the ledger line and the order's "booked", in two tables, all or nothing
            dynamodb.transact_write_items(TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": key}, "charge_id": {"S": charge.id}},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Update": {"TableName": ORDERS, "Key": {"pk": {"S": f"claim#{key}"}},
                            "UpdateExpression": "SET booked = :t", "ExpressionAttributeValues": {":t": {"BOOL": True}}}},
            ])
        except dynamodb.exceptions.TransactionCanceledException as cancelled:
            codes = [reason.get("Code") for reason in cancelled.response.get("CancellationReasons", [])]
            if codes[:1] != ["ConditionalCheckFailed"]:
                raise
            # the line is there: booked by a copy that charged beside this one (Stripe replayed it)
    return {"ok": True}
