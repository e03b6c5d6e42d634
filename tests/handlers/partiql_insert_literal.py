"""From the adversary's round 5 (/work/adv/check/adv5_correct_partiql_literal.py, REPORT.md F3), kept here
as found. A correct checker says it HOLDS (exit 0): DynamoDB refuses an INSERT of a key the table has
(DuplicateItemException), so the claim is a claim; moto 5.2 wrote it over the item, and the check said
double_charge until idem.sim.platform.partiql_insert.

Correct, written unusually (the twin of adv5_correct_partiql_insert with the values written into the
statement, the key being a hex digest): claims the order with a PartiQL INSERT (ExecuteStatement), which on
DynamoDB refuses an item whose key already exists: "If the DynamoDB table already has an item with the
same primary key as the primary key of the item being inserted, DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). On that
refusal it reads the claim (strongly consistent): an order booked is skipped however late it comes;
one first attempted over 23 hours ago and never booked is left to a person (Stripe keeps a key "at
least 24 hours": https://docs.stripe.com/idempotency); otherwise it charges under the same key (Stripe
replays). The key is the bucket, the account and the order id. Books the charge once on the claim.
Must HOLD in every family."""
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
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.execute_statement(
                Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'pk': '{key}', 'first_attempt_at': {int(now)}}}")
        except ClientError as error:
            if error.response["Error"]["Code"] != "DuplicateItemException":
                raise
            item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True)["Item"]
            if "charge_id" in item:
                continue  # booked already
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                                   "a person must look") from None
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
