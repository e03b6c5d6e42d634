"""Right: sqs_keyed (claim, charge under the order's key, book once, failures reported per message) that first
extends each message's visibility timeout to 15 minutes with ChangeMessageVisibility, "so no other
poller receives it while we charge". The call is allowed on a message in flight, with the receipt
handle of its latest receive, and its new timeout counts from the call
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html):
a message that fails comes back 15 minutes later instead of after the queue's own timeout, which changes
nothing about what is charged. Must HOLD under --trigger sqs; a checker whose queue is not the one the
function calls answers ReceiptHandleIsInvalid and the handler never charges."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours
WORKING_VISIBILITY_SECONDS = 900


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3, sqs = make_provider(), boto3.client("dynamodb"), boto3.client("s3"), boto3.client("sqs")
    failures = []
    for message in event["Records"]:
        queue_url = sqs.get_queue_url(QueueName=message["eventSourceARN"].rsplit(":", 1)[1])["QueueUrl"]
        try:
            # "no other poller gets it while we charge": hidden for 15 minutes from now
            sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["receiptHandle"],
                                          VisibilityTimeout=WORKING_VISIBILITY_SECONDS)
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
