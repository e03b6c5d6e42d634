"""Send a welcome email through SES for every sign-up file uploaded to the bucket.

The send is wrapped the way many samples wrap it: a ClientError is printed and the function
returns a 500. The invocation then succeeds as far as Lambda is concerned.
"""
import json
import os
import urllib.parse

import boto3
from botocore.exceptions import ClientError

s3 = boto3.client("s3")
ses = boto3.client("ses")
SENDER = os.environ["SENDER"]


def lambda_handler(event, context):
    record = event["Records"][0]
    bucket = record["s3"]["bucket"]["name"]
    key = urllib.parse.unquote_plus(record["s3"]["object"]["key"])
    signup = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    try:
        response = ses.send_email(
            Source=SENDER,
            Destination={"ToAddresses": [signup["email"]]},
            Message={
                "Subject": {"Data": "Welcome aboard"},
                "Body": {"Text": {"Data": f"Hello {signup.get('name', 'there')}, thanks for signing up."}},
            },
        )
    except ClientError as e:
        print(e.response["Error"]["Message"])
        return {"statusCode": 500, "body": "email not sent"}

    print(f"Email sent! Message ID: {response['MessageId']}")
    return {"statusCode": 200, "body": "email sent"}
