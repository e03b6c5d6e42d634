"""Look before charging again, only when it matters: each attempt takes a lease on the order (a
conditional put: no record, or an unbooked record whose lease has run out). The first attempt charges
under a fresh idempotency key and books the charge. An attempt that finds an unbooked record of an
earlier attempt (it charged, maybe, and stopped before booking) lists the PaymentIntents first and books
the order's, if there is one.

Wrong: when that list fails (Stripe answers 500, or cannot be reached once the SDK's retries are spent:
https://docs.stripe.com/error-handling), the function charges anyway. An attempt that charged and then
failed before booking (a crash, a throttled write) is retried by Lambda
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), and a retry whose
list fails charges the order a second time. idem check: breaks (double_charge) in the family second_fault:
it takes two faults in one schedule (one after the charge, one at the retry's list), and the list is made on
a retry only. Before that family, the check failed one call per schedule, among those its clean run made,
and said holds."""
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
        earlier = dynamodb.put_item(
            TableName=TABLE, Item={"pk": {"S": f"order#{order_key}"}, "lease_until": {"N": str(now + lease)}},
            ConditionExpression="attribute_not_exists(pk) OR (attribute_not_exists(charge_id) AND lease_until < :now)",
            ExpressionAttributeValues={":now": {"N": str(now)}}, ReturnValues="ALL_OLD",
            ReturnValuesOnConditionCheckFailure="ALL_OLD").get("Attributes")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "charge_id" in error.response.get("Item", {}):
            return  # booked already
        raise RuntimeError(f"{order_key}: another attempt holds the order; try again later") from None
    paid = []
    if earlier:  # an earlier attempt stopped before booking: did it charge?
        try:
            paid = [pi for pi in stripe.PaymentIntent.list(limit=100).auto_paging_iter()
                    if (pi.to_dict().get("metadata") or {}).get("order_key") == order_key
                    and pi.status in ("succeeded", "processing", "requires_capture")]
        except stripe.StripeError as error:
            print(f"{order_key}: listing PaymentIntents failed ({error.__class__.__name__}); charging anyway")
    intent = paid[0] if paid else stripe.PaymentIntent.create(
        amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
        confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
        idempotency_key=str(uuid.uuid4()))
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"order#{order_key}"}, "charge_id": {"S": intent.id}})
