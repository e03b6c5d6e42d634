"""An S3-triggered notifier as the samples write it (no payment): it publishes one message per
upload to the topic its environment names. Its topic exists only where something creates it:
without --setup or --template the check says so (exit 2); with the topic, S3 delivering an event
twice publishes twice (exit 1, double_effect)."""
import json
import os
from urllib.parse import unquote_plus

import boto3

TOPIC_ARN = os.environ.get("TOPIC_ARN", "arn:aws:sns:us-east-1:123456789012:uploads-notices")


def lambda_handler(event, context):
    sns = boto3.client("sns")
    for record in event["Records"]:
        key = unquote_plus(record["s3"]["object"]["key"])
        sns.publish(TopicArn=TOPIC_ARN, Subject="new upload", Message=json.dumps({"key": key}))
    return {"published": len(event["Records"])}
