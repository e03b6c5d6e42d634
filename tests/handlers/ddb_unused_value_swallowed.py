"""A correct checker says it BREAKS (exit 1): ddb_unused_value with every ClientError of the ledger
write read as "booked already". DynamoDB refuses the write (an ExpressionAttributeValues entry no
expression uses: ValidationException, "Value provided in ExpressionAttributeValues unused in
expressions: keys: {:pending}";
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html),
the handler swallows it and marks the claim booked: every order is charged and never in the books,
nothing fails, even with no fault. moto 5.2 wrote the item; the check broke it only for an injected
throttle swallowed the same way (idem.sim.platform.request_checks). From the adversary's round 6
(r6_unused_value_swallowed)."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]
KEY_WINDOW_SECONDS = 23 * 3600


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
        key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago; a person must look") from None
        charge = provider.charge(customer="acct-1", amount=int(order["amount_cents"]), currency=order["currency"],
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE,
                              Item={"pk": {"S": key}, "charge_id": {"S": charge.id}, "status": {"S": "booked"}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ExpressionAttributeValues={":pending": {"S": "pending"}})  # left from the old condition
        except ClientError:
            pass  # booked already by an earlier attempt
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
