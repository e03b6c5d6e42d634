"""The key of an upload, and one ledger line per charge, written once."""
import os

import boto3


def upload_key(record):
    s3 = record["s3"]
    return f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"


def book_once(key, charge_id):
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": key}, "charge_id": {"S": charge_id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass
