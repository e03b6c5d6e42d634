"""Look before you charge: the order's PaymentIntent carries the order's key in its metadata, and
before creating one the function searches Stripe for it. Each attempt takes a lease on the order
(a conditional put: no record, or an unbooked record whose lease has run out), searches, books what
it finds, else charges under a fresh idempotency key (the SDK's own resends reuse it:
max_network_retries) and books the charge.

Wrong: Stripe's search is not read-after-write. "Don't use search for read-after-write flows (for
example, searching immediately after a charge is made) because the data won't be immediately
available to search. Under normal operating conditions, data is searchable in under 1 minute.
Propagation of new or updated data could be more delayed during an outage"
(https://docs.stripe.com/search#data-freshness; https://docs.stripe.com/api/payment_intents/search:
"can be up to an hour behind during outages"). An attempt that charged and stopped before booking
(a crash, every answer lost) is retried by Lambda a minute later, or the S3 copy comes; the search
can miss the first PaymentIntent and the fresh key charges the order a second time. idem check: breaks (double_charge; its loopback Stripe keeps a new
PaymentIntent out of search for the documented hour)."""
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
            TableName=TABLE, Item={"pk": {"S": f"order#{order_key}"}, "lease_until": {"N": str(now + lease)}},
            ConditionExpression="attribute_not_exists(pk) OR (attribute_not_exists(charge_id) AND lease_until < :now)",
            ExpressionAttributeValues={":now": {"N": str(now)}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = error.response.get("Item", {})
        if "charge_id" in item:
            return  # booked already
        raise RuntimeError(f"{order_key}: another attempt holds the order; try again later") from None
    found = stripe.PaymentIntent.search(query=f"metadata['order_key']:'{order_key}'")
    paid = [pi for pi in found.data if pi.status in ("succeeded", "processing", "requires_capture")]
    if paid:
        intent = paid[0]
    else:
        intent = stripe.PaymentIntent.create(
            amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
            confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
            idempotency_key=str(uuid.uuid4()))
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"order#{order_key}"}, "charge_id": {"S": intent.id}})
