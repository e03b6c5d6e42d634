"""Correct, written with boto3's resource API as many teams write DynamoDB code: `Table.put_item` with
`ConditionExpression=Attr("pk").not_exists()` and `ReturnValuesOnConditionCheckFailure="ALL_OLD"`,
`Table.update_item` with `Attr` conditions, plain Python values instead of typed attributes
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/dynamodb.html: "boto3.dynamodb.conditions.Attr
should be used when the condition is related to an attribute of the item"). keyed_books' design: claim the
order (bucket, account, order id) keeping the first attempt's time, charge under the order's key, book
the charge id on the claim once; an order booked is skipped however late it comes, one first attempted
over 23 hours ago and never booked is left to a person (Stripe may prune a key "at least 24 hours
old": https://docs.stripe.com/idempotency). The resource's Decimal numbers and its exceptions (on
`table.meta.client.exceptions`) are the only differences. Must HOLD in every family."""
import hashlib
import json
import os
import time
from decimal import Decimal
from urllib.parse import unquote_plus

import boto3
from boto3.dynamodb.conditions import Attr

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours
table = boto3.resource("dynamodb").Table(TABLE)
s3 = boto3.client("s3")


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider = make_provider()
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = Decimal(str(time.time()))
        try:
            table.put_item(Item={"pk": key, "first_attempt_at": now}, ConditionExpression=Attr("pk").not_exists(),
                           ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except table.meta.client.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if "charge_id" in claim:
                continue  # booked already
            if float(now) - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            table.update_item(Key={"pk": key}, UpdateExpression="SET charge_id = :c",
                              ConditionExpression=Attr("charge_id").not_exists() | Attr("charge_id").eq(charge.id),
                              ExpressionAttributeValues={":c": charge.id})
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
