"""Right: an SQS-fed handler (S3 -> SQS -> Lambda, ReportBatchItemFailures on). Each message's
order is read from the order file at the message's version (its order_id) and charged with an
idempotency key made from the order, so a redelivered message, a retried batch or the uploader's
retried PUT of the same order (a new version, the same bytes) replays the first charge
(docs/one_charge_per_order.md); its ledger line is a conditional put, so a second line is never
written. A message that fails is reported in batchItemFailures, and only it comes back.
Must HOLD under --trigger sqs."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                charge_once(provider, dynamodb, s3, record["s3"])
        except Exception as error:  # this message only: the others are done
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}


def charge_once(provider, dynamodb, s3_client, s3):
    name, bucket = unquote_plus(s3["object"]["key"]), s3["bucket"]["name"]
    # the order file at this exact version: a later PUT of the name cannot change what this message is
    body = s3_client.get_object(Bucket=bucket, Key=name, VersionId=s3["object"]["versionId"])["Body"].read()
    order_id = json.loads(body)["order_id"]
    source = f"s3://{bucket}/{name} order {order_id}"  # the same for every upload of this order
    key = hashlib.sha256(f"order:{order_id}".encode()).hexdigest()
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=source,
                                 idempotency_key=key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:
            return  # declined: a final answer, not a failure to retry
        raise
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # booked already (a redelivery) is fine; anything else fails the message
