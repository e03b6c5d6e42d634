"""Who pays, read once per container: the function reads the account's linked customer
(`account#<ACCOUNT>` in the ledger table, written by the runbook) and its saved default card, and
keeps both in module globals so that warm invocations skip two reads ("one function, one tenant").
Otherwise it is keyed_books' pattern over Stripe's SDK: a claim keeping the first attempt's time, one
PaymentIntent per (account, order) under a key made from both, booked once. The PaymentIntent's
metadata names the account and the order, for the support team.

Wrong: Lambda reuses an execution environment for later invocations ("objects declared outside of
the function's handler method remain initialized ... when the function is invoked again",
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), whatever account
uploaded; another account's order served by a warm container is charged to the first account's
customer. idem check: breaks (the accounts family: double_charge, the first account's
customer charged for the other account's order)."""
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
_payer = None  # (customer, payment method), read once per container


def payer(dynamodb, account):
    global _payer
    if _payer is None:
        item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"account#{account}"}}, ConsistentRead=True)["Item"]
        customer = stripe.Customer.retrieve(item["customer"]["S"])
        _payer = (customer.id, customer.invoice_settings.default_payment_method)
    return _payer


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        charge_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def charge_once(dynamodb, s3, record):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key = f"{bucket}/{account}/order/{order['order_id']}"
    now = time.time()
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
            raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked: a person must look") from None
    customer, method = payer(dynamodb, account)
    try:
        intent = stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), customer=customer,
            payment_method=method, confirm=True, off_session=True,
            metadata={"account": account, "order_id": str(order["order_id"])},
            idempotency_key=hashlib.sha256(key.encode()).hexdigest())
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                         ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                         ExpressionAttributeValues={":c": {"S": intent.id}})
