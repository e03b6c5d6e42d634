"""Wrong, as teams write it trusting the SDK: Stripe's SDK with `stripe.max_network_retries = 2` and no
idempotency key of its own ("the SDK adds one"). stripe-python does add a key to a POST it may resend,
so its OWN resends of one request replay; but the key is made per request
(https://docs.stripe.com/error-low-level#idempotency: "a client generates an idempotency key"; the
SDK's is a fresh UUID each call), and a Lambda retry after the charge (or a copy of the event) is a
new request: a second PaymentIntent. It claims the order first (keyed by the account and the order,
the first attempt's time kept) and skips an order already booked, as keyed_books does, so only a
retry or copy between the charge and its booking shows it. Must BREAK (double_charge)."""
import json
import os
import time
from urllib.parse import unquote_plus

import boto3
import stripe
from botocore.exceptions import ClientError

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
stripe.max_network_retries = 2
TABLE = os.environ["LEDGER_TABLE"]


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=obj["versionId"])["Body"].read()
                           if obj.get("versionId") else s3.get_object(Bucket=bucket, Key=name)["Body"].read())
        key = f"{bucket}/{name.split('/', 1)[0]}/order/{order['order_id']}"
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(time.time())}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if "charge_id" in error.response.get("Item", {}):
                continue  # booked already
        intent = stripe.PaymentIntent.create(amount=500, currency="usd", payment_method="pm_card_visa",
                                             confirm=True, metadata={"order": key})
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": intent.id}})
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{intent.id}"}, "charge_id": {"S": intent.id}})
    return {"ok": True}
