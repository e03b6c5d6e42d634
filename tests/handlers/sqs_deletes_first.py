"""Wrong: sqs_deletes_own's twin that deletes each message from its queue BEFORE the work ("so that no
other poller gets it while we work"), then raises if any failed. A deleted message never comes back
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html), so a
message whose charge failed is neither retried nor moved to the dead-letter queue: silent loss. Must
BREAK under --trigger sqs (a checker that ignored the function's own DeleteMessage would retry the
message and say holds)."""
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


class BatchFailed(Exception):
    pass


def lambda_handler(event, context):
    provider, dynamodb, s3, sqs = make_provider(), boto3.client("dynamodb"), boto3.client("s3"), boto3.client("sqs")
    failed = []
    for message in event["Records"]:
        # taken: delete it first, "so that no other poller gets it while we work"
        queue_name = message["eventSourceARN"].rsplit(":", 1)[1]
        sqs.delete_message(QueueUrl=sqs.get_queue_url(QueueName=queue_name)["QueueUrl"],
                           ReceiptHandle=message["receiptHandle"])
        try:
            for record in json.loads(message["body"])["Records"]:
                charge_once(provider, dynamodb, s3, record["s3"])
        except Exception as error:
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failed.append(message["messageId"])
    if failed:
        raise BatchFailed(f"{len(failed)} of {len(event['Records'])} messages failed: {failed}")


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
