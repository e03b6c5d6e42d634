"""Cannot be judged: stripe_direct, but it charges with Stripe's legacy Charges API (`stripe.Charge.create`,
POST /v1/charges, idempotency key and all) as many older integrations still do. The check's loopback
Stripe serves PaymentIntents (and Customers, PaymentMethods, Refunds) only, so the handler's clean run
fails on the check's side, not its own: exit 2, saying which API it calls, never "breaks" (exit 1)."""
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
        intent = stripe.Charge.create(
            amount=500, currency="usd", source="tok_visa",
            metadata={"account": "acct-1", "reference": f"{bucket}/{name}"},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": intent.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
    return {"ok": True}
