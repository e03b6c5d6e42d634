"""A correct checker says it HOLDS (exit 0): it claims the order with a PartiQL INSERT sent in a
BatchExecuteStatement and reads the statement's answer, as AWS says it must: "A HTTP 200 response does
not mean that all statements in the BatchExecuteStatement succeeded. Error details for individual
statements can be found under the Error field of the BatchStatementResponse for each statement"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchExecuteStatement.html); an
INSERT of a key the table has is such an error, code `DuplicateItem`
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchStatementError.html). moto 5.2
wrote the INSERT over the item and answered no error, and the check said double_charge until
idem.sim.platform.partiql_insert refused it.

Correct, written as a team would: the claim in a batch of one, the values in the statement (the key a
hex digest). On `DuplicateItem` it reads the claim (strongly consistent): an order booked is skipped
however late it comes; one first attempted over 23 hours ago and never booked is left to a person
(Stripe keeps a key "at least 24 hours": https://docs.stripe.com/idempotency); otherwise it charges
under the same key (Stripe replays). Any other error of the statement fails the invocation. Books the
charge once on the claim. Must HOLD in every family."""
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
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        answer = dynamodb.batch_execute_statement(Statements=[
            {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': '{key}', 'first_attempt_at': {int(now)}}}"}])
        error = answer["Responses"][0].get("Error")
        if error:
            if error.get("Code") != "DuplicateItem":
                raise RuntimeError(f"{key}: the claim failed: {error}")
            item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True)["Item"]
            if "charge_id" in item:
                continue  # booked already
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; a person must look")
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
