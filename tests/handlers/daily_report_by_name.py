"""daily_report keyed by the name alone (tests/templates/exact_key.yaml, DailyReportByName): a new
report uploaded at reports/daily.csv the next day is taken for the one already imported, and never
imported. A second order at the same name needs new bytes, which the check cannot make of a CSV:
given a second file at the same KEY (--object day2.csv=reports/daily.csv), it finds the loss."""
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["IMPORTS_TABLE"]


def lambda_handler(event, context):
    s3, dynamodb = boto3.client("s3"), boto3.client("dynamodb")
    for record in event["Records"]:
        bucket, key = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
        rows = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode().splitlines()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"upload": {"S": key}, "rows": {"N": str(len(rows))}},
                              ConditionExpression="attribute_not_exists(upload)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            print(f"already imported: {key}")
    return {"imported": len(event["Records"])}
