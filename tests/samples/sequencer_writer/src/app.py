"""Keep, for every object name, the content of its newest upload.

S3 does not deliver notifications in order, but every PUT's event carries a sequencer: for one
object key, the greater sequencer is the later event
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html).
The item is written only if it is absent or holds an older sequencer; an event older than the
one already stored (or the same one again) is skipped on purpose: its upload was superseded.
"""
import json
import os
import urllib.parse

import boto3
from botocore.exceptions import ClientError

s3 = boto3.client("s3")
dynamodb = boto3.client("dynamodb")
TABLE_NAME = os.environ["TABLE_NAME"]
WIDTH = 64  # sequencers differ in length: padded to one width, they compare as strings


def padded(sequencer):
    return sequencer.upper().ljust(WIDTH, "0")


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        obj = record["s3"]["object"]
        key = urllib.parse.unquote_plus(obj["key"])
        sequencer = padded(obj["sequencer"])
        body = s3.get_object(Bucket=bucket, Key=key, **({"VersionId": obj["versionId"]} if obj.get("versionId") else {}))
        content = body["Body"].read().decode("utf-8")
        try:
            dynamodb.put_item(
                TableName=TABLE_NAME,
                Item={"object_key": {"S": key}, "sequencer": {"S": sequencer},
                      "content": {"S": content}, "etag": {"S": obj.get("eTag", "")}},
                ConditionExpression="attribute_not_exists(object_key) OR #s < :s",
                ExpressionAttributeNames={"#s": "sequencer"},
                ExpressionAttributeValues={":s": {"S": sequencer}},
            )
            print(f"Indexed {key} at {obj['sequencer']}")
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            print(f"Skipped {key} at {obj['sequencer']}: this upload or a newer one is already indexed")
    return {"statusCode": 200, "body": json.dumps({"records": len(event["Records"])})}
