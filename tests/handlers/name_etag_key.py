"""Wrong: keyed_books' claim and charge, but the order is keyed by the object's name and ETag ("the same
bytes at the same name are the same order; the ETag is their MD5"). An ETag is not the bytes' identity: "The
entity tag is an opaque string. The entity tag may or may not be an MD5 digest of the object data"
(https://docs.aws.amazon.com/AmazonS3/latest/API/mpUploadComplete.html); a multipart object's is an MD5
of its parts' MD5s and their count, and an SSE-KMS object's is no MD5 of its data
(https://github.com/iterate-ch/cyberduck/issues/10371 sums it up): the uploader's retried upload of the
same order (a multipart upload with other part sizes, as the CLI and the SDKs' transfer managers make
above their thresholds, or into a bucket encrypting with SSE-KMS) comes with another ETag, so another
key, and Stripe charges it again. Must BREAK in the overwrite family (double_charge)."""
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
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, IfMatch=obj["eTag"])["Body"].read())
        key = "charge#upload#" + hashlib.sha256(f"{bucket}\n{name}\n{obj['eTag']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already: S3's copy of this event, or a retry
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order.get("amount_cents", 500), currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
