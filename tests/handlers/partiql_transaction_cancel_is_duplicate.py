"""A correct checker says it BREAKS (exit 1, silent_loss): it claims the order with an INSERT inside a
PartiQL transaction (ExecuteTransaction), as `partiql_transaction_claim` does, but reads every
TransactionCanceledException as "another invocation has this order" and returns. DynamoDB cancels a
transaction for other reasons than a duplicate key, "insufficient provisioned capacity for the
transaction to be completed" among them
(https://docs.aws.amazon.com/botocore/latest/reference/services/dynamodb/client/exceptions/TransactionCanceledException.html),
and a PartiQL transaction's singleton errors cancel it the same way, naming each in its cancellation
reasons (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.transactions.html):
a throttled claim is skipped as a duplicate, and that order is never charged. Wrong, written as a
team would: the cancellation's reasons are never read."""
import hashlib
import json
import os
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
        digest = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        key = "charge#order#" + digest
        try:
            dynamodb.execute_transaction(TransactStatements=[
                {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': '{key}'}}"},
                {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': 'order#{digest}', "
                              f"'amount_cents': {int(order['amount_cents'])}}}"}])
        except dynamodb.exceptions.TransactionCanceledException:
            continue  # "a duplicate": another invocation has this order
        charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
