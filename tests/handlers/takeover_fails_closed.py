"""Take over an order whose earlier attempt stopped, and let a failed takeover raise: each attempt claims
the order with a lease (a conditional put: no record yet). An attempt that finds an unbooked claim whose
lease has run out (an earlier attempt stopped before booking) takes the claim over with a conditional
update, then charges under the order's own idempotency key, so a charge the earlier attempt made is
replayed, not made again (https://docs.stripe.com/api/idempotent_requests), and books it.

Half right, the twin of takeover_fail_open: only ConditionalCheckFailed means another attempt took the
order over; any other error of the takeover (a throttle, once botocore's attempts are spent) raises, so
Lambda retries the invocation (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).

Wrong still: a ConditionalCheckFailed can be its own. When the takeover's answer is lost after it did its
work, botocore sends the same request again (a read timeout is retried in every retry mode:
https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), and the resend fails the
condition its own first attempt changed. The function then returns success on an order nobody charges:
silent_loss. idem check: breaks in the family second_fault, where the takeover's answer is lost; it holds
where the takeover is throttled. takeover_own_token tells its own takeover from another's, and holds."""
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
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": pk}, UpdateExpression="SET lease_until = :until",
                                 ConditionExpression="lease_until = :seen AND attribute_not_exists(charge_id)",
                                 ExpressionAttributeValues={":until": {"N": str(now + lease)},
                                                            ":seen": claim["lease_until"]})
        except ClientError as lost:
            if lost.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            print(f"{order_key}: another attempt took the order over")
            return
    intent = stripe.PaymentIntent.create(
        amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
        confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
        idempotency_key=f"order-{order_key}")
    dynamodb.put_item(TableName=TABLE, Item={"pk": pk, "charge_id": {"S": intent.id}})
