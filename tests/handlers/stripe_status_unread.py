"""Charges the account's linked customer (the mapping account#<ACCOUNT>) on the customer's saved
default payment method, with Stripe's SDK, under a key made of the account and the order, after a
claim that keeps the first attempt's time. DEFECT: it books whatever PaymentIntent Stripe answers
with HTTP 200 as paid, never reading `status`. Confirming on-session (no off_session) a card that
needs 3-D Secure answers 200 with status `requires_action`; a bank debit answers `processing` and may
later fail (https://docs.stripe.com/payments/paymentintents/lifecycle). Either is booked as charged:
the order is marked paid, no money moved, and every later copy skips it (silent loss)."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3
import stripe
from botocore.exceptions import ClientError

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        charge_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def customer_of(dynamodb, account):
    item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"account#{account}"}},
                             ConsistentRead=True).get("Item")
    if not item:
        raise RuntimeError(f"account {account} has no linked customer")
    return item["customer"]["S"]


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key, now = f"{bucket}/{account}/order/{order['order_id']}", time.time()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = error.response.get("Item", {})
        if "charge_id" in item or "declined" in item:
            return
        if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked") from None
    customer = customer_of(dynamodb, account)
    method = stripe.Customer.retrieve(customer).invoice_settings.default_payment_method
    try:
        intent = stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), customer=customer,
            payment_method=method, confirm=True,
            metadata={"account": account, "order_id": order["order_id"]},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    # the create answered 200: paid (status never read)
    try:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": intent.id}})
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            raise RuntimeError(f"{key}: booked with another charge than {intent.id}") from None
        raise
