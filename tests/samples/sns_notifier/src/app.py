"""Publish a message to SNS for every object created in the upload bucket."""
import json
import os
import urllib.parse

import boto3

sns = boto3.client("sns")
TOPIC_ARN = os.environ["TOPIC_ARN"]


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        message = {"bucket": bucket, "key": key, "size": record["s3"]["object"].get("size", 0)}
        response = sns.publish(
            TopicArn=TOPIC_ARN,
            Subject="New upload",
            Message=json.dumps(message),
        )
        print(f"Published {response['MessageId']} for s3://{bucket}/{key}")
    return {"statusCode": 200, "body": json.dumps({"published": len(event["Records"])})}
