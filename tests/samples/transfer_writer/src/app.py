"""Summarise each uploaded CSV into a JSON report, written with boto3's transfer manager.

upload_file sends the report from the transfer manager's own threads
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/s3.html: TransferConfig,
use_threads). The report's key comes from the CSV's key, and its bytes from the CSV's bytes,
so writing it again leaves the same object.
"""
import csv
import io
import json
import os
import tempfile
import urllib.parse

import boto3

s3 = boto3.client("s3")
REPORT_BUCKET = os.environ["REPORT_BUCKET"]


def summarise(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    columns = list(rows[0].keys()) if rows else []
    return {"rows": len(rows), "columns": columns}


def lambda_handler(event, context):
    for record in event["Records"]:
        bucket = record["s3"]["bucket"]["name"]
        key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
        text = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")
        report = summarise(text)
        report["source"] = key
        report_key = "reports/" + key.rsplit(".", 1)[0] + ".json"
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "report.json")
            with open(path, "w") as f:
                json.dump(report, f, sort_keys=True)
            s3.upload_file(path, REPORT_BUCKET, report_key)
        print(f"Wrote s3://{REPORT_BUCKET}/{report_key}")
    return {"statusCode": 200}
