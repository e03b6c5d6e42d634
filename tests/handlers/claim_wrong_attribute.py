"""Wrong: claim_stores_uuid (a V4 UUID made on the order's first attempt, kept in its claim, every retry
charging under it), but the claim's condition names an attribute the claim never writes:
`attribute_not_exists(order_id)`, where the claim item holds `pk`, `idempotency_key` and
`first_attempt_at`. A condition is evaluated against the item with that key as it stands, and
`attribute_not_exists` is true for an attribute the item lacks
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html),
so every put succeeds and overwrites the claim with a new UUID: a copy, or a retry after the first
attempt's charge, charges under another key, and Stripe charges again. Must BREAK (double_charge)."""
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


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        order_ref = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now, idempotency_key = time.time(), str(uuid.uuid4())
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"order#{order_ref}"},
                                                     "idempotency_key": {"S": idempotency_key},
                                                     "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(order_id)",  # "no claim for this order yet"
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response["Item"]
            if "charge_id" in claim:
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"order {order_ref}: first attempted over 23 h ago and never booked; "
                                   "a person must look") from None
            idempotency_key = claim["idempotency_key"]["S"]  # the first attempt's key, whoever made it
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=idempotency_key)
        try:  # one ledger line per charge
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                     "order": {"S": order_ref}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked by an earlier attempt of this charge
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"order#{order_ref}"}},
                             UpdateExpression="SET charge_id = :c", ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
