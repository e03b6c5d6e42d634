"""A team's S3-triggered copier, written for the bucket and filter its template gives it
(tests/templates/outside_triggers.yaml: bucket UploadBucketName, keys under incoming/ ending .json):
it reads the upload from the bucket its settings name, refuses any key outside incoming/ as a
misconfiguration, and writes one copy under processed/, keyed by the upload's name and eTag, with
a conditional put (a repeat of the same upload is the same copy). It holds when the check uploads
where the trigger says; it fails its clean run when the upload lands anywhere else."""
import os
from urllib.parse import unquote_plus

import boto3

BUCKET = os.environ["UPLOAD_BUCKET"]


def lambda_handler(event, context):
    s3 = boto3.client("s3")
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
        if bucket != BUCKET or not key.startswith("incoming/") or not key.endswith(".json"):
            raise ValueError(f"not an upload this function is configured for: s3://{bucket}/{key}")
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        s3.put_object(Bucket=BUCKET, Key="processed/" + key[len("incoming/"):], Body=body)
    return {"copied": len(event["Records"])}
