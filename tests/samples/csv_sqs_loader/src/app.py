"""Load the rows of each CSV uploaded to the bucket into DynamoDB, one item per email.

S3 sends its notifications to an SQS queue; the function gets them in batches and reports the
messages it could not process in batchItemFailures, so only those come back
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
"""
import csv
import io
import json
import os
import urllib.parse

import boto3

s3 = boto3.client("s3")
table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def load_csv(bucket, key):
    text = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    with table.batch_writer(overwrite_by_pkeys=["email"]) as batch:
        for row in rows:
            batch.put_item(Item=row)
    return len(rows)


def lambda_handler(event, context):
    failures = []
    for message in event["Records"]:
        try:
            body = json.loads(message["body"])
            if body.get("Event") == "s3:TestEvent":
                continue
            for record in body.get("Records", []):
                bucket = record["s3"]["bucket"]["name"]
                key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
                count = load_csv(bucket, key)
                print(f"Loaded {count} rows from {key}")
        except Exception as e:  # report this message, keep going with the others
            print(f"Failed message {message['messageId']}: {e!r}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}
