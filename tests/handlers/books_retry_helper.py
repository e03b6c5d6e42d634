"""Charges (keyed by the order), then books the charge through a retry helper that tries a throttled
write 3 times and then logs and returns, as many teams' helpers do. BREAKS: a table throttled for
longer than three tries (a run of 3 throttles: DynamoDB throttles every request over the table's
capacity, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html,
ProvisionedThroughputExceededException after the SDK's own retries) leaves a charge with no ledger
line while the function reports success (silent_mismatch). A single throttle, or two, is absorbed."""
import hashlib
import json
import logging
import os
import time
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]
THROTTLED = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
log = logging.getLogger(__name__)


def make_provider():
    raise RuntimeError("the check replaces this")


def with_retries(call, tries=3, **params):
    """`call(**params)`, tried again on a throttle; after `tries`, logged and given up."""
    for attempt in range(tries):
        try:
            return call(**params)
        except ClientError as error:
            if error.response["Error"]["Code"] not in THROTTLED:
                raise
            time.sleep(0.1 * 2 ** attempt)
    log.error("gave up after %d throttled tries: %s", tries, params.get("Item", {}).get("pk"))
    return None


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{order['order_id']}".encode()).hexdigest()
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        with_retries(dynamodb.put_item, TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
    return {"ok": True}
