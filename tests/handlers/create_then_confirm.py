"""Create, then confirm, in two calls with two keys (the create under `<key>-create`, the confirm
under `<key>-confirm`), as Stripe's two-step server-side flow does
(https://docs.stripe.com/api/payment_intents/confirm). It claims the order first, keeping the first
attempt's time; a retry replays both calls' answers (https://docs.stripe.com/idempotency), so the
order's one PaymentIntent is confirmed once. Correct: a checker that served the confirm would say
holds. idem check does not serve a separate confirm: exit 2, naming the request it cannot answer."""
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
        hold_once(dynamodb, s3, record["s3"])
    return {"ok": True}


def hold_once(dynamodb, s3, record):
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
    idem = hashlib.sha256(key.encode()).hexdigest()
    intent = stripe.PaymentIntent.create(  # create, then confirm: each call under its own key
        amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
        metadata={"account": account, "order_id": str(order["order_id"])}, idempotency_key=idem + "-create")
    try:
        intent = stripe.PaymentIntent.confirm(intent.id, off_session=True, idempotency_key=idem + "-confirm")
    except stripe.CardError as error:
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET declined = :d",
                             ExpressionAttributeValues={":d": {"S": str(error.code)}})
        return
    if intent.status != "succeeded":
        raise RuntimeError(f"{key}: {intent.id} is {intent.status}")
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}},
                         UpdateExpression="SET charge_id = :c",
                         ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                         ExpressionAttributeValues={":c": {"S": intent.id}})
