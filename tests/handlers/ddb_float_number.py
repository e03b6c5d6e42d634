"""A correct checker says the clean run fails (exit 1): the ledger line's `tax_usd` is
`str(Decimal(amount / 100 * 0.0725))`, a binary float written out in full (Decimal(0.9062499999999999)
has 53 significant digits). "Numbers can have up to 38 digits of precision. Exceeding this results in
an exception." (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html):
DynamoDB refuses the PutItem with a ValidationException ("Attempting to store more than 38
significant digits in a Number"), so every invocation charges and then fails at its ledger write. moto
5.2 stored the number, and the check said it holds (idem.sim.platform.request_checks). Otherwise
keyed_books' logic. From the adversary's round 6 (r6_float_decimal_tax)."""
import hashlib
import json
import os
import time
from decimal import Decimal
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
TAX_RATE = 0.0725  # California base rate
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
        amount = int(order["amount_cents"])
        charge = provider.charge(customer="acct-1", amount=amount, currency=order["currency"],
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        tax = Decimal(amount / 100 * TAX_RATE)  # "Decimal for money"
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id},
                                                     "tax_usd": {"N": str(tax)}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"claim#{key}"}}, UpdateExpression="SET booked = :t",
                             ExpressionAttributeValues={":t": {"BOOL": True}})
    return {"ok": True}
