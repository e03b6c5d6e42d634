"""Correct under --trigger eventbridge: eventbridge_claimed, logging how late each event came by reading
the envelope's `time` in whole seconds, as AWS writes it ("2021-11-12T00:00:00Z" in S3's Object Created
example: https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html; "2017-12-22T18:43:48Z"
in EventBridge's event structure: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html).
The check once gave that field S3's eventTime, with milliseconds, and failed this handler's clean run."""
import hashlib
import json
import os
import sys
import time
from datetime import datetime, timezone

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    sent = datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    print(f"event lag {time.time() - sent.timestamp():.1f}s", file=sys.stderr)
    detail = event["detail"]
    bucket, obj = detail["bucket"]["name"], detail["object"]
    name = obj["key"]  # EventBridge's key is not URL-encoded
    read = {"VersionId": obj["version-id"]} if obj.get("version-id") else {"IfMatch": obj["etag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
    now = time.time()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        claim = error.response.get("Item", {})
        if claim.get("booked", {}).get("BOOL"):
            return {"status": "done already"}  # a copy, a retry, or the same order sent again
        if "declined" in claim:
            return {"status": "declined"}
        if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                               "have pruned its key: a person must look") from None
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"s3://{bucket}/{name}",
                                 idempotency_key=key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:  # a final answer, not a failure to retry
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET declined = :t",
                                 ExpressionAttributeValues={":t": {"BOOL": True}})
            return {"status": "declined"}
        raise
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # else booked already: a retry of a charge the provider replayed
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                         ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"status": "charged"}
