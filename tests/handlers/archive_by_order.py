"""Correct: archives each order, the exact bytes it read (by version, or IfMatch on the eTag), into the
archive bucket at <account>/<order_id>.json. A copy or a retry writes the same bytes to the same key,
and S3 keeps one object per key ("If an object with the same key already exists in the bucket, S3
replaces it", https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html); a second order at
the same upload name has its own order id, so its own archive object. HOLDS with `--effect
s3:PutObject --setup archive_setup.py:create`. The twin that copies the name's current object
(archive_copy_latest.py) breaks."""
import json
import os
from urllib.parse import unquote_plus

import boto3

s3 = boto3.client("s3")


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        key = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        body = s3.get_object(Bucket=bucket, Key=key, **read)["Body"].read()
        order = json.loads(body)
        account = key.split("/", 1)[0]
        s3.put_object(Bucket=os.environ["ARCHIVE_BUCKET"], Key=f"{account}/{order['order_id']}.json",
                      Body=body, ContentType="application/json")
    return {"ok": True}
