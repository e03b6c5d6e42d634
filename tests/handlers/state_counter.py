"""Counts the uploads of each name with UpdateItem ADD: a second run of one upload leaves the
item with another content (2 where the clean run left 1), a break although it is one item."""
import os
import urllib.parse

import boto3

dynamodb = boto3.client("dynamodb")


def lambda_handler(event, context):
    for record in event["Records"]:
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        dynamodb.update_item(TableName=os.environ["LEDGER_TABLE"], Key={"pk": {"S": f"count#{key}"}},
                             UpdateExpression="ADD uploads :one", ExpressionAttributeValues={":one": {"N": "1"}})
    return {"statusCode": 200}
