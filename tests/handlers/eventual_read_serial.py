"""Wrong, even as deployed with `ReservedConcurrentExecutions: 1` (tests/templates/adversary3.yaml,
`SerialEventual`): serial_uuid_claim, which holds there, but its claim read without ConsistentRead
("reads are cheaper eventually consistent"). One at a time is not enough: "When issuing eventually
consistent reads to a DynamoDB table or an index, the responses may not reflect the results of a recently
completed write operation"
(https://docs.amazonaws.cn/en_us/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.md). A copy
of the event throttled while the first ran, tried again 1 s after it (or S3's copy arriving then), can
read no claim, write one with a new UUID over the first, and charge under it: two charges. Must BREAK
there (double_charge)."""
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
        # "one at a time" (ReservedConcurrentExecutions: 1): read the claim, write it if there is none
        claim = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"order#{order_ref}"}}).get("Item")
        if claim is None:
            idempotency_key = str(uuid.uuid4())
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"order#{order_ref}"},
                                                     "idempotency_key": {"S": idempotency_key},
                                                     "first_attempt_at": {"N": str(now)}})
        else:
            if "charge_id" in claim:
                continue  # booked already
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"order {order_ref}: first attempted over 23 h ago and never booked; "
                                   "a person must look")
            idempotency_key = claim["idempotency_key"]["S"]  # the first attempt's key
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=idempotency_key)
        try:  # one ledger line per charge
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id},
                                                     "order": {"S": order_ref}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked by an earlier attempt of this charge
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"order#{order_ref}"}},
                             UpdateExpression="SET charge_id = :c", ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
