"""Wrong: calls Stripe through a StripeClient made at cold start, with no idempotency key, then
books the charge: a retry after the charge charges again. The check aims the client at its
loopback Stripe (the module imports stripe) and finds the double charge (exit 1)."""
import os

import boto3
import stripe

client = stripe.StripeClient(os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment"))
TABLE = os.environ["LEDGER_TABLE"]


def lambda_handler(event, context):
    dynamodb = boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"
        intent = client.v1.payment_intents.create(params={
            "amount": 500, "currency": "usd", "payment_method": "pm_card_visa", "confirm": True,
            "metadata": {"account": "acct-1", "reference": key}})
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": intent.id}, "charge_id": {"S": intent.id}})
    return {"ok": True}
