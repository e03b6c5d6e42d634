"""An S3-triggered notifier that publishes to an SNS FIFO topic (tests/handlers/sns_fifo_notifier.yaml):
one message per upload, MessageGroupId the bucket, MessageDeduplicationId derived from the upload:
bucket, key and eTag (the uploader's retried PUT of the same bytes is the same upload), hashed (the
id takes up to 128 ASCII letters, digits and punctuation; a key may hold any character). S3
delivering an event twice, or a retry after a lost answer, publishes the same id again and the
topic delivers it once: a message with an id already sent is "accepted successfully but [isn't]
delivered" within the 5-minute deduplication interval
(https://docs.aws.amazon.com/sns/latest/api/API_PublishBatchRequestEntry.html). The check breaks:
a copy of S3's event can come hours later, past the 5-minute interval (idem/explore/families/timings.py).

`lambda_handler_fresh_id` is the same notifier with a fresh uuid4 as its deduplication id at each
publish: every retry is a new message, and the topic delivers it twice (double_effect).
`lambda_handler_by_content` sends no id: its topic has ContentBasedDeduplication, the id is a
hash of the message body, the same for the same upload (breaks the same way past 5 minutes)."""
import hashlib
import json
import os
import uuid
from urllib.parse import unquote_plus

import boto3

TOPIC_ARN = os.environ.get("TOPIC_ARN", "arn:aws:sns:us-east-1:123456789012:uploads-notices.fifo")


def _notify(event, dedup_id):
    sns = boto3.client("sns")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        key = unquote_plus(obj["key"])
        ids = {"MessageDeduplicationId": dedup_id(bucket, obj)} if dedup_id else {}
        sns.publish(TopicArn=TOPIC_ARN, Message=json.dumps({"key": key, "etag": obj.get("eTag")}),
                    MessageGroupId=bucket, **ids)
    return {"published": len(event["Records"])}


def lambda_handler(event, context):
    return _notify(event, lambda bucket, obj: hashlib.sha256(
        f"{bucket}/{obj['key']}/{obj.get('eTag')}".encode()).hexdigest())


def lambda_handler_fresh_id(event, context):
    return _notify(event, lambda bucket, obj: str(uuid.uuid4()))  # the bug: a new id at each attempt


def lambda_handler_by_content(event, context):
    return _notify(event, None)
