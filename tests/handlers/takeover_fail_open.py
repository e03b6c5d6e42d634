"""Take over an order whose earlier attempt stopped: each attempt claims the order with a lease (a
conditional put: no record yet). An attempt that finds an unbooked claim whose lease has run out (an
earlier attempt stopped before booking) takes the claim over with a conditional update, then charges under
the order's own idempotency key, so a charge the earlier attempt made is replayed, not made again
(https://docs.stripe.com/api/idempotent_requests), and books it.

Wrong: it reads any error from the takeover as "another attempt took the order over" and returns success.
A throttle is an error too: "The Amazon Web Services SDKs for DynamoDB automatically retry requests that
receive this exception", and botocore raises it once its attempts are spent
(https://docs.aws.amazon.com/sdk-for-python/v1/reference/clients/dynamodb/errors/ProvisionedThroughputExceededException/).
So an attempt that stopped before charging, followed by a retry whose takeover is throttled, leaves the order
unpaid, and Lambda, seeing success, never tries again: silent_loss. idem check: breaks in the family
second_fault. It takes two faults in one schedule (one before the charge, one at the retry's update), and
the update is made on a retry only. Before that family failed AWS calls too, the check said holds."""
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
            print(f"{order_key}: another attempt took the order over ({lost.response['Error']['Code']})")
            return
    intent = stripe.PaymentIntent.create(
        amount=order["amount_cents"], currency=order.get("currency", "usd"), payment_method="pm_card_visa",
        confirm=True, off_session=True, metadata={"account": account, "order_key": order_key},
        idempotency_key=f"order-{order_key}")
    dynamodb.put_item(TableName=TABLE, Item={"pk": pk, "charge_id": {"S": intent.id}})
