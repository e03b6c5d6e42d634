"""A correct checker says the clean run fails (exit 1): the ledger write is a PutItem whose
ExpressionAttributeValues hold `:pending`, which its ConditionExpression (`attribute_not_exists(pk)`) no
longer uses, left from an older condition. DynamoDB refuses such a request with a ValidationException
("Value provided in ExpressionAttributeValues unused in expressions: keys: {:pending}"; AWS: "If you
define an expression attribute value, you must use it consistently throughout the expression",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html),
so every invocation charges and then fails at its ledger write, with no fault at all. moto 5.2 wrote the
item, and the check said it holds (idem.sim.platform.request_checks). From the adversary's round 6
(r6_unused_value)."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

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
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass  # booked already by an earlier attempt
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
