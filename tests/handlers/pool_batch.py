"""SQS-fed, ReportBatchItemFailures on: the batch's messages are charged concurrently on a
ThreadPoolExecutor, each future mapped to its own messageId, and every message whose future raised is
reported (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html: only the
reported messages come back). Same claim/charge/book as sqs_keyed. Correct: HOLDS.

When the process dies in one message's thread, the others die with it: on Lambda a crashed process's
threads all end at once, and a function's threads run only while an invocation of their execution
environment runs ("Lambda freezes the execution environment when the runtime and each extension have
completed and there are no pending events":
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). So no charge a thread of one
delivery makes can land among a later batch's: a checker that lets it says double_charge, at random."""
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def handle_message(provider, dynamodb, s3, message):
    for record in json.loads(message["body"])["Records"]:
        charge_once(provider, dynamodb, s3, record["s3"])


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    failures = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {pool.submit(handle_message, provider, dynamodb, s3, message): message["messageId"]
                   for message in event["Records"]}
        for future in as_completed(futures):
            error = future.exception()
            if error is not None:
                print(f"{futures[future]} failed: {type(error).__name__}: {error}")
                failures.append({"itemIdentifier": futures[future]})
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
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except dynamodb.exceptions.ConditionalCheckFailedException as taken:
        item = taken.response.get("Item", {})
        if "charge_id" in item:
            return  # booked already: a copy, a retried batch, or the same order sent again
        if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                               "Stripe may have pruned its key: a person must look") from None
    try:
        charge = provider.charge(customer="acct-1", amount=500, currency="usd",
                                 reference=f"s3://{bucket}/{name} order {order_id}", idempotency_key=key)
    except Exception as error:
        if getattr(error, "http_status", None) == 402:
            return  # declined: a final answer, not a failure to retry
        raise
    try:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    except dynamodb.exceptions.ConditionalCheckFailedException:
        raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
