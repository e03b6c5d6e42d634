"""Copy each upload to the output bucket, one invocation at a time per object name.

A lock item is put with a condition (it must not exist, or must have expired). An invocation
that finds the lock held waits: it sleeps and tries again until the lock is released or its own
time is nearly up, and then raises so Lambda retries the event later. The holder releases the
lock when it is done, and a lock left by an invocation that died expires after the function's
timeout.
"""
import os
import time
import urllib.parse

import boto3
from botocore.exceptions import ClientError

s3 = boto3.client("s3")
dynamodb = boto3.client("dynamodb")
LOCK_TABLE = os.environ["LOCK_TABLE"]
OUTPUT_BUCKET = os.environ["OUTPUT_BUCKET"]
POLL_SECONDS = float(os.environ.get("POLL_SECONDS", "2"))
MARGIN_MS = 5000  # stop waiting with this much time left


class LockBusy(Exception):
    """The lock was still held when the function ran out of time to wait."""


def acquire(object_key, owner, context):
    now = int(time.time())
    expires = now + context.get_remaining_time_in_millis() // 1000 + 1
    try:
        dynamodb.put_item(
            TableName=LOCK_TABLE,
            Item={"object_key": {"S": object_key}, "owner": {"S": owner}, "expires_at": {"N": str(expires)}},
            ConditionExpression="attribute_not_exists(object_key) OR expires_at < :now",
            ExpressionAttributeValues={":now": {"N": str(now)}},
        )
        return True
    except ClientError as e:
        if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise


def release(object_key, owner):
    try:
        dynamodb.delete_item(
            TableName=LOCK_TABLE,
            Key={"object_key": {"S": object_key}},
            ConditionExpression="#o = :me",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":me": {"S": owner}},
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        owner = context.aws_request_id
        while not acquire(key, owner, context):
            if context.get_remaining_time_in_millis() < MARGIN_MS:
                raise LockBusy(f"lock on {key} still held; giving the event back to Lambda")
            print(f"{key} is locked, waiting {POLL_SECONDS} s")
            time.sleep(POLL_SECONDS)
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            s3.put_object(Bucket=OUTPUT_BUCKET, Key=key, Body=body)
            print(f"Copied {key} to {OUTPUT_BUCKET}")
        finally:
            release(key, owner)
    return {"statusCode": 200}
