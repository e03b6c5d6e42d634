"""Stripe as the record of what was charged: each attempt locks the order for a while (a conditional
put with a lease), lists the PaymentIntents to find the order's, books the one it finds, else charges
under a fresh idempotency key and books that, then unlocks. The list is the only guard against a
second charge.

Wrong: when the list fails (Stripe answers 500, or cannot be reached once the SDK's own retries are
spent: https://docs.stripe.com/error-handling, "Server errors" and "Connection errors") the function
charges anyway, "so that an outage at Stripe does not hold orders up". S3 delivers an event more than
once (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html, "Event
notifications are designed to be delivered at least once"), and the copy whose list fails charges the
order a second time. idem check: breaks (double_charge), once Stripe's reads can fail too; before,
every read was answered, and it said holds. Its twin, list_fails_closed, lets the error raise."""
import json
import os
import time
import uuid
from urllib.parse import unquote_plus

import boto3
import stripe
from botocore.exceptions import ClientError

stripe.api_key = os.environ.get("STRIPE_API_KEY", "sk_test_from_the_environment")
stripe.max_network_retries = 2
TABLE = os.environ["LEDGER_TABLE"]
FAIL_OPEN = True  # an outage at Stripe must not hold orders up


def lambda_handler(event, context):
    dynamodb, s3 = boto3.client("dynamodb"), boto3.client("s3")
    lease = context.get_remaining_time_in_millis() / 1000 + 5
    for record in event["Records"]:
        charge_once(dynamodb, s3, record["s3"], lease)
    return {"ok": True}


def charge_once(dynamodb, s3, record, lease):
    bucket, obj = record["bucket"]["name"], record["object"]
    name = unquote_plus(obj["key"])
    read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    order_key = f"{account}:{order['order_id']}"
    now = time.time()
    try:
        dynamodb.put_item(
            TableName=TABLE, Item={"pk": {"S": f"lock#{order_key}"}, "lease_until": {"N": str(now + lease)}},
            ConditionExpression="attribute_not_exists(pk) OR lease_until < :now",
            ExpressionAttributeValues={":now": {"N": str(now)}})
    except ClientError as error:
        if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
            raise RuntimeError(f"{order_key}: another attempt holds the order; try again later") from None
        raise
    try:
        try:
            paid = [pi for pi in stripe.PaymentIntent.list(limit=100).auto_paging_iter()
                    if (pi.to_dict().get("metadata") or {}).get("order_key") == order_key
                    and pi.status in ("succeeded", "processing", "requires_capture")]
        except stripe.StripeError as error:
            if not FAIL_OPEN:
                raise
            print(f"{order_key}: listing PaymentIntents failed ({error.__class__.__name__}); charging anyway")
            paid = []
        intent = paid[0] if paid else stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
            confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
            idempotency_key=str(uuid.uuid4()))
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"order#{order_key}"}, "charge_id": {"S": intent.id}})
    finally:
        dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": f"lock#{order_key}"}})
