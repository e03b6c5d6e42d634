"""Wrong, even as deployed with `ReservedConcurrentExecutions: 1` (tests/templates/eventual_reads.yaml,
`GsiClaim`): serial_uuid_claim (which holds there), but its claims are keyed by their own UUID and found by
order through the ledger's `by_order` global secondary index. Every read of a global secondary index is
eventually consistent: "the responses may not reflect the results of a recently completed write operation"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html). S3's copy
of the event, throttled while the first invocation ran and tried again a second later
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), finds no claim through
the index, writes a second one with a new UUID and charges under it: two charges. Must BREAK (double_charge).
Before the check read as DynamoDB may (idem.sim.platform.eventual_reads), it said holds."""
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
        # "one at a time" (ReservedConcurrentExecutions: 1): find the order's claim, write one if there is none
        found = dynamodb.query(TableName=TABLE, IndexName="by_order", KeyConditionExpression="order_ref = :o",
                               ExpressionAttributeValues={":o": {"S": order_ref}})["Items"]
        if not found:
            idempotency_key = str(uuid.uuid4())
            claim_pk = f"claim#{idempotency_key}"
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": claim_pk}, "order_ref": {"S": order_ref},
                                                     "first_attempt_at": {"N": str(now)}})
        else:
            claim_pk = found[0]["pk"]["S"]
            claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": claim_pk}}, ConsistentRead=True)["Item"]
            if "charge_id" in claim:
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"order {order_ref}: first attempted over 23 h ago and never booked; "
                                   "a person must look")
            idempotency_key = claim_pk.removeprefix("claim#")  # the first attempt's key
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=idempotency_key)
        try:  # one ledger line per charge
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                     "order": {"S": order_ref}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked by an earlier attempt of this charge
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": claim_pk}},
                             UpdateExpression="SET charge_id = :c", ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
