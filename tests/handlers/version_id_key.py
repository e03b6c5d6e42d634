"""Wrong: keyed_books' claim and charge, but the order is keyed by the object's version ("every upload to
our versioned bucket has its own versionId, so a retry of the same event is the same version"). The
key is right for S3's own copies of one event, and wrong for the uploader's: "If you enable versioning
for a bucket, Amazon S3 automatically generates a unique version ID for the object being stored"
(https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/aws.sdk.kotlin.services.s3.model/-put-object-response/version-id.html), so a PUT the uploader
retries after a lost answer, with the same order in it, is a new version and a new key: Stripe charges
it again. Must BREAK in the overwrite family (double_charge)."""
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
        version = obj.get("versionId") or obj["sequencer"]
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=version)["Body"].read()
                           if obj.get("versionId") else s3.get_object(Bucket=bucket, Key=name)["Body"].read())
        key = "charge#version#" + hashlib.sha256(f"{bucket}\n{name}\n{version}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already: S3's copy of this version's event, or a retry
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order.get("amount_cents", 500), currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
