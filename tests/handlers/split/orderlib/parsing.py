"""The uploads an event announces: S3's records, or S3's records inside SQS messages' bodies."""
import json

from orderlib.records import Upload


def uploads(event):
    for record in event["Records"]:
        if record.get("eventSource") == "aws:sqs":
            yield from uploads(json.loads(record["body"]))
        elif record.get("eventSource") == "aws:s3":
            yield Upload(record)
