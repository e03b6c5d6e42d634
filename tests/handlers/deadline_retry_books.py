"""Wrong: keyed_books' claim and charge, with the ledger line written through a helper that retries a
throttled PutItem "until the function is about to time out" (0.1 s between tries), then logs and
returns, so the invocation never times out. Must BREAK (silent_mismatch, in the runs family): under a
table throttled for the rest of the invocation (DynamoDB throttles every request over capacity:
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html) it gives up
at its deadline, and the invocation succeeds with a charge that has no ledger line and nothing failed."""
import hashlib
import json
import logging
import os
import time
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600
THROTTLED = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
log = logging.getLogger()


def make_provider():
    raise RuntimeError("the check replaces this")


def put_until_deadline(dynamodb, context, **params):
    while True:
        try:
            return dynamodb.put_item(**params)
        except ClientError as error:
            if error.response["Error"]["Code"] not in THROTTLED:
                raise
            if context.get_remaining_time_in_millis() < 2000:
                log.error("table throttled until the deadline, giving up on %s", params["Item"]["pk"]["S"])
                return None
            time.sleep(0.1)


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
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago, never booked: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        put_until_deadline(dynamodb, context, TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
