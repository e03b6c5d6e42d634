"""S3 -> SQS handler as sqs_keyed, which also skips a message with no "Records": S3 sends an
s3:TestEvent to a queue when its notification is configured (S3 "verifies that any SNS or SQS
destination exists ... by sending a test notification",
https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketNotificationConfiguration.html), and a
team does not want it in its dead-letter queue. Right when the bucket notifies the queue itself: must
HOLD under --trigger sqs. Deployed behind an SNS topic (tests/templates/sns_fanout.yaml, function
SkipsTest: raw message delivery off, the default), every body is SNS's envelope, whose top has no
"Records" ("The Amazon SQS message contains the subject and message that were published to the topic
along with metadata about the message in a JSON document",
https://docs.aws.amazon.com/sns/latest/dg/sns-sqs-as-subscriber.html): every order is skipped and its
message deleted. Must BREAK there, silent_loss (docs/check_from_a_template.md, P24)."""
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
    failures = []
    for message in event["Records"]:
        try:
            s3_event = json.loads(message["body"])
            if "Records" not in s3_event:
                print(f"{message['messageId']}: no Records ({s3_event.get('Event', 'not an S3 event')}), skipped")
                continue
            for record in s3_event["Records"]:
                charge_once(provider, dynamodb, s3, record["s3"])
        except Exception as error:
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
