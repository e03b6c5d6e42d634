"""Correct on AWS (two stages chained by S3's own event): keyed_books' claim, key and first attempt's
time. Stage 1 (an order file with no `charge-id` metadata): claim, charge under the order's key, then
record the charge id on the file itself with CopyObject onto the same key (MetadataDirective REPLACE).
That copy is a new object created, for which S3 sends `s3:ObjectCreated:Copy` to the same function
("s3:ObjectCreated:* ... Put, Post, Copy, CompleteMultipartUpload":
https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html;
"if the bucket triggers a function each time an object is uploaded, and the function uploads an object to
the bucket, then the function indirectly triggers itself": https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html).
Stage 2 (the copy's event: the version it names carries `charge-id`): write the ledger line (keyed by the
charge id: written once) and mark the claim booked; it copies nothing, so the chain is two invocations
long. S3's notifications are at least once, and each stage is retried by Lambda and reaches the failure
destination when it fails every attempt. A crash after the charge and before the copy: the retry charges
under the same key (Stripe replays) and copies. Must HOLD on AWS (one charge, one line), where the
bucket's notification sends ObjectCreated:* to the function, but for one case: in a bucket without
versioning, a second order uploaded at the same name while stage one runs is the object stage one
copies, so both copies carry order 2's charge id and order 1's charge is never booked (the check's
family overwrite breaks there: silent_mismatch). The check (tests/test_check_own_writes.py) delivers
the copy's event as S3 does (docs/check_from_a_template.md, P23)."""
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
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        got = s3.get_object(Bucket=bucket, Key=name, **read)
        meta = got.get("Metadata", {})
        if meta.get("charge-id"):  # stage 2: our own copy's event; book what stage 1 charged
            key = meta["order-key"]
            try:
                dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{meta['charge-id']}"},
                                                         "charge_id": {"S": meta["charge-id"]}, "order": {"S": key}},
                                  ConditionExpression="attribute_not_exists(pk)")
            except dynamodb.exceptions.ConditionalCheckFailedException:
                pass  # booked already
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}},
                                 UpdateExpression="SET booked = :t", ExpressionAttributeValues={":t": {"BOOL": True}})
            continue
        order = json.loads(got["Body"].read())
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
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        s3.copy_object(Bucket=bucket, Key=name, CopySource={"Bucket": bucket, "Key": name, **read},
                       MetadataDirective="REPLACE", ContentType=got.get("ContentType", "application/json"),
                       Metadata={**meta, "charge-id": charge.id, "order-key": key})
    return {"ok": True}
