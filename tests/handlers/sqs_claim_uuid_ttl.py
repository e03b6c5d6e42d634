"""Wrong: sqs_keyed with Stripe's suggested V4 UUID as the charge's key, made on the order's first attempt
and kept in its claim, and a TTL on the claim ("a stuck claim frees itself after two hours"), removed
once booked. A failed message comes back after the queue's visibility timeout, up to 12 hours
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html),
by when DynamoDB may have deleted the expired claim ("typically within two days":
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html): the message
makes a new UUID and charges again. Must BREAK under --trigger sqs (double_charge in retry_ends)."""
import hashlib
import json
import os
import time
import uuid
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours
CLAIM_TTL_SECONDS = 2 * 3600  # a stuck claim frees itself


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


def order_key(bucket, name, order_id):
    account = name.split("/", 1)[0]
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order_id}".encode()).hexdigest()


def charge_once(provider, dynamodb, s3_client, s3):
    name, bucket = unquote_plus(s3["object"]["key"]), s3["bucket"]["name"]
    # the order file at this exact version: a later PUT of the name cannot change what this message is
    body = s3_client.get_object(Bucket=bucket, Key=name, VersionId=s3["object"]["versionId"])["Body"].read()
    order_id = json.loads(body)["order_id"]
    key, now = order_key(bucket, name, order_id), time.time()
    idempotency_key = str(uuid.uuid4())  # Stripe's advice: a V4 UUID, made on the order's first attempt
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)},
                                                 "idempotency_key": {"S": idempotency_key},
                                                 "expires_at": {"N": str(int(now) + CLAIM_TTL_SECONDS)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except dynamodb.exceptions.ConditionalCheckFailedException as taken:
        item = taken.response.get("Item", {})
        if "charge_id" in item:
            return  # booked already: a copy, a retried batch, or the same order sent again
        if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                               "Stripe may have pruned its key: a person must look") from None
        idempotency_key = item["idempotency_key"]["S"]  # the first attempt's key, whoever made it
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd",
                                 reference=f"s3://{bucket}/{name} order {order_id}",
                                 idempotency_key=idempotency_key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:
            return  # declined: a final answer, not a failure to retry
        raise
    try:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c REMOVE expires_at",
                             ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    except dynamodb.exceptions.ConditionalCheckFailedException:
        raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
