"""A correct checker says it BREAKS (exit 1, double_charge): the twin of partiql_batch_claim that sends
its claim in a BatchExecuteStatement and never reads the statement's answer. DynamoDB answers a batch
with HTTP 200 and each statement's failure in its Error field ("A HTTP 200 response does not mean that
all statements in the BatchExecuteStatement succeeded":
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchExecuteStatement.html), so the
claim refused as `DuplicateItem` goes unseen and the order is charged again: past Stripe's 24-hour key
window (https://docs.stripe.com/idempotency) that is a second charge."""
import hashlib
import json
import os
import time
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


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
        dynamodb.batch_execute_statement(Statements=[
            {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': '{key}', 'first_attempt_at': {int(time.time())}}}"}])
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
