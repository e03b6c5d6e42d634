"""Wrong: keyed_books, but it reads the order file with `IfMatch` on the event's eTag (ignoring the
versionId) and takes S3's 412 as "a newer upload replaced this file; its own event will charge it":
logged and skipped, the invocation succeeds. GetObject with If-Match returns the object "only if its
entity tag (ETag) is the same as the one specified; otherwise, return a 412 Precondition Failed error"
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html). When a second order is uploaded at
the same name before the first's event is read, the first order (a different order id, still in the
bucket as an older version) is skipped: never charged, nothing in the failure queue. Must BREAK
(silent_loss) in the overwrite family."""
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


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        try:
            order = json.loads(s3.get_object(Bucket=bucket, Key=name, IfMatch=obj["eTag"])["Body"].read())
        except s3.exceptions.ClientError as error:
            if error.response["Error"]["Code"] in ("PreconditionFailed", "412"):
                print(f"{name}: replaced by a newer upload, skipped")
                continue
            raise
        account = name.split("/", 1)[0]
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
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
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
