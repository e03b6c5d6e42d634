"""Correct, and calls Stripe's SDK directly as most teams do (module-level api_key,
stripe.PaymentIntent.create with an idempotency key made from the upload), then books one ledger
line per charge. The check aims the SDK at its loopback Stripe (it imports stripe): holds."""
import hashlib
import os

import boto3
import stripe

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
TABLE = os.environ["LEDGER_TABLE"]


def lambda_handler(event, context):
    dynamodb = boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"
        intent = stripe.PaymentIntent.create(
            amount=500, currency="usd", payment_method="pm_card_visa", confirm=True,
            metadata={"account": "acct-1", "reference": key},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": intent.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
    return {"ok": True}
