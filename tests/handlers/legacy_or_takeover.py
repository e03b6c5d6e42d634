"""Wrong on AWS: the claim is written with DynamoDB's legacy conditional parameters (code from before
condition expressions): "put the claim if the order has no record, OR its record was never booked", each
attempt putting its own attempt id, under which it charges. ConditionalOperator OR: "If at least one of
the conditions evaluates to true, then the entire map evaluates to true"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.ConditionalOperator.html);
both conditions written as `NULL` ("The attribute does not exist")
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.Expected.html).
So on DynamoDB every attempt of an order not yet booked wins the put and replaces the record with a new
attempt id: Lambda's retry after a crash that followed the charge
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), or S3's second
delivery of the event while the first runs, charges under a new idempotency key: two charges (Stripe
replays only a key it has seen: https://docs.stripe.com/idempotency). The `except` branch (resume under
the stored attempt id) is reached on DynamoDB only for a booked order. Must BREAK (double_charge)."""
import hashlib
import json
import os
import time
import uuid
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600  # under Stripe's 24 hours


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        account = name.split("/", 1)[0]
        order_ref = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        attempt = str(uuid.uuid4())
        try:  # new order, or an attempt that never booked: this attempt takes it
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{order_ref}"}, "attempt": {"S": attempt},
                                                     "first_attempt_at": {"N": str(now)}},
                              Expected={"pk": {"ComparisonOperator": "NULL"}, "booked_at": {"ComparisonOperator": "NULL"}},
                              ConditionalOperator="OR")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"claim#{order_ref}"}},
                                      ConsistentRead=True)["Item"]
            if "booked_at" in claim:
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"order {order_ref}: first attempted over 23 h ago and never booked: "
                                   "a person must look") from None
            attempt = claim["attempt"]["S"]  # resume under the attempt that holds the record
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=attempt)
        try:  # one ledger line per charge
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                     "order": {"S": order_ref}},
                              Expected={"pk": {"Exists": False}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked by an earlier attempt of this charge
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{order_ref}"}},
                             AttributeUpdates={"booked_at": {"Value": {"N": str(time.time())}, "Action": "PUT"},
                                               "charge_id": {"Value": {"S": charge.id}, "Action": "PUT"}})
    return {"ok": True}
