"""Correct, and calls Stripe's SDK directly as most teams do (module-level api_key,
stripe.PaymentIntent.create with an idempotency key made from the order the file names), then books one ledger
line per charge. The check aims the SDK at its loopback Stripe (it imports stripe): holds."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
import stripe

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
TABLE = os.environ["LEDGER_TABLE"]


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        # one charge per ORDER (docs/one_charge_per_order.md); no version in the request: Stripe
        # compares a resent request's parameters, so a retried PUT must send the same ones
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        key = f"{bucket}/order/{order['order_id']}"
        intent = stripe.PaymentIntent.create(
            amount=500, currency="usd", payment_method="pm_card_visa", confirm=True, off_session=True,
            metadata={"account": "acct-1", "reference": f"{bucket}/{name}"},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": intent.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
    return {"ok": True}
