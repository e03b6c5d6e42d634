"""Correct: keyed_books with its claim an S3 object written with `If-None-Match: *` (PutObject
IfNoneMatch="*": "uploads the object only if the object key name does not already exist in the bucket
specified. Otherwise, Amazon S3 returns a 412 Precondition Failed error":
https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html) under `_claims/`, keeping the
first attempt's time. A 412 is not read as "someone else has it": the order's ledger line is read
(consistently); booked, the upload is skipped; not booked, it charges under the order's key (Stripe
replays a charge already made), unless the first attempt is over 23 hours old (Stripe may have pruned the
key: a person must look). One ledger line per charge (a conditional put). Must HOLD."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

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
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:  # the claim: an object that exists once ("only if the object key name does not already exist")
            s3.put_object(Bucket=bucket, Key=f"_claims/{key}", Body=json.dumps({"first_attempt_at": now}).encode(),
                          IfNoneMatch="*")
        except ClientError as error:
            if error.response["Error"]["Code"] not in ("PreconditionFailed", "412"):
                raise
            # claimed before: by a copy, a retry, or botocore's resend of this very put; booked?
            line = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
            if line:
                continue  # booked already
            claim = json.loads(s3.get_object(Bucket=bucket, Key=f"_claims/{key}")["Body"].read())
            if now - claim["first_attempt_at"] > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                                   "have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already: this is a retry of a charge the provider replayed
    return {"ok": True}
