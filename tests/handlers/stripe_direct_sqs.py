"""Correct: an SQS-fed handler (S3 -> SQS -> Lambda, ReportBatchItemFailures on) that calls Stripe's
SDK directly, keyed by the order the file names (docs/one_charge_per_order.md). A decline (402,
`stripe.CardError`) is a final answer for that order: it is logged and not retried, and the other
messages of the batch go on. Must HOLD under --trigger sqs, the provider's decline included."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
import stripe
from botocore.exceptions import ClientError

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
TABLE = os.environ["LEDGER_TABLE"]


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"])["Records"]:
                charge_once(dynamodb, s3, record["s3"])
        except Exception as error:  # this message only: the others are done
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    key = f"{bucket}/order/{order['order_id']}"
    try:
        intent = stripe.PaymentIntent.create(
            amount=500, currency="usd", payment_method="pm_card_visa", confirm=True,
            metadata={"account": "acct-1", "reference": f"{bucket}/{name}"},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        print(f"{key} declined: {error.code}")  # final: retrying would get the same answer
        return
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": intent.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise  # booked already (a redelivery) is fine; anything else fails the message
