"""The key of an order, its claim, and one ledger line per charge, written once."""
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours: https://docs.stripe.com/idempotency


def order_key(record):
    """One charge per ORDER (docs/one_charge_per_order.md): the account (the key's first folder) and
    the order_id the exact version names."""
    bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    body = boto3.client("s3").get_object(Bucket=bucket, Key=name, **read)["Body"].read()
    account = name.split("/", 1)[0]
    return f"charge#order#{hash((bucket, account, json.loads(body)['order_id'])) & 0xFFFFFFFFFFFF:012x}"


def claim(key):
    """May this invocation charge the order? False when it is booked already; a claim put keeps the
    first attempt's time, and an order first attempted over 23 hours ago and never booked raises
    (Stripe may have pruned its key: a new charge could follow), left to a person."""
    dynamodb, now = boto3.client("dynamodb"), time.time()
    try:
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"],
                          Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except dynamodb.exceptions.ConditionalCheckFailedException as taken:
        held = taken.response.get("Item", {})
        if held.get("booked", {}).get("BOOL"):
            return False
        if now - float(held["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                               "have pruned its key: a person must look") from None
    return True


def book_once(key, charge_id):
    """The ledger line, written once, then the claim marked booked."""
    dynamodb, table = boto3.client("dynamodb"), os.environ["LEDGER_TABLE"]
    try:
        dynamodb.put_item(TableName=table, Item={"pk": {"S": key}, "charge_id": {"S": charge_id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked already: this is a retry of a charge the provider replayed
    dynamodb.update_item(TableName=table, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                         ExpressionAttributeValues={":t": {"BOOL": True}})
