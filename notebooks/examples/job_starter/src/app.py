"""Start a processing job for every uploaded document: one job item, keyed by a new job id."""
import datetime
import os
import urllib.parse
import uuid

import boto3

dynamodb = boto3.client("dynamodb")
JOBS_TABLE = os.environ["JOBS_TABLE"]


def lambda_handler(event, context):
    started = []
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        job_id = str(uuid.uuid1())
        dynamodb.put_item(
            TableName=JOBS_TABLE,
            Item={
                "job_id": {"S": job_id},
                "client_token": {"S": str(uuid.uuid4())},
                "status": {"S": "SUBMITTED"},
                "document": {"S": f"s3://{bucket}/{key}"},
                "submitted_at": {"S": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            },
        )
        print(f"Started job {job_id} for s3://{bucket}/{key}")
        started.append(job_id)
    return {"statusCode": 200, "jobs": started}
