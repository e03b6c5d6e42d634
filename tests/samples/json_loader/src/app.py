"""Load each JSON file uploaded to the bucket into DynamoDB, one item per file name.

PutItem replaces an item with the same key, so loading a file again writes the same item.
"""
import json
import os
import urllib.parse
from decimal import Decimal

import boto3

s3 = boto3.client("s3")
table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        data = json.loads(body, parse_float=Decimal)
        item = {**data, "file_name": key}
        table.put_item(Item=item)
        print(f"Loaded {key} into {table.name}")
    return {"statusCode": 200}
