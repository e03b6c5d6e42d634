"""The key of an order, and one ledger line per charge, written once."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3


def order_key(record):
    """One charge per ORDER (docs/one_charge_per_order.md): the order_id the exact version names."""
    bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    body = boto3.client("s3").get_object(Bucket=bucket, Key=unquote_plus(obj["key"]), **read)["Body"].read()
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{json.loads(body)['order_id']}".encode()).hexdigest()


def book_once(key, charge_id):
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": key}, "charge_id": {"S": charge_id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass
