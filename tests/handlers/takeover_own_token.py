"""Take over an order whose earlier attempt stopped, and know a takeover of its own: each attempt claims
the order with a lease (a conditional put: no record yet). An attempt that finds an unbooked claim whose
lease has run out (an earlier attempt stopped before booking) takes the claim over with a conditional
update, then charges under the order's own idempotency key, so a charge the earlier attempt made is
replayed, not made again (https://docs.stripe.com/api/idempotent_requests), and books it.

Right: the takeover writes a token of its own attempt's beside the new lease. A ConditionalCheckFailed
whose item (ReturnValuesOnConditionCheckFailure=ALL_OLD) carries that token is its own write, answered
again: botocore resent a takeover whose answer was lost
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), and the order is this
attempt's to charge. Only another token means another attempt took the order over. Any other error
raises, so Lambda retries the invocation. idem check with the families faults and second_fault (as its test
runs it): holds, where its twins takeover_fail_open and takeover_fails_closed break. With every family it
breaks in `again`: an order charged and never booked, redriven a day later, is charged again under a key
Stripe no longer keeps ("at least 24 hours old": https://docs.stripe.com/api/idempotent_requests); the
handler to copy looks its charge up past that window."""
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
    pk, now = {"S": f"order#{order_key}"}, time.time()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": pk, "lease_until": {"N": str(now + lease)}},
                          ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        claim = error.response.get("Item", {})
        if "charge_id" in claim:
            return  # booked already
        if float(claim["lease_until"]["N"]) > now:
            raise RuntimeError(f"{order_key}: another attempt holds the order; try again later") from None
        token = {"S": str(uuid.uuid4())}
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": pk},
                                 UpdateExpression="SET lease_until = :until, taken_by = :token",
                                 ConditionExpression="lease_until = :seen AND attribute_not_exists(charge_id)",
                                 ExpressionAttributeValues={":until": {"N": str(now + lease)}, ":token": token,
                                                            ":seen": claim["lease_until"]},
                                 ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as refused:
            if refused.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if refused.response.get("Item", {}).get("taken_by") != token:
                print(f"{order_key}: another attempt took the order over")
                return
    intent = stripe.PaymentIntent.create(
        amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
        confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
        idempotency_key=f"order-{order_key}")
    dynamodb.put_item(TableName=TABLE, Item={"pk": pk, "charge_id": {"S": intent.id}})
