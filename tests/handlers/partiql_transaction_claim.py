"""A correct checker says it HOLDS (exit 0): it claims the order and writes its order row in one PartiQL
transaction (ExecuteTransaction), and DynamoDB cancels the whole transaction when the claim's key is in
the table: "If any of the singleton INSERT, UPDATE, or DELETE operations return an error, the
transactions are cancelled with the TransactionCanceledException exception, and the cancellation
reason code includes the errors from the individual singleton operations"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.transactions.html),
an INSERT of a key the table has being one ("DuplicateItemException is returned":
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). moto 5.2
wrote both INSERTs over the items there, and the check said double_charge until
idem.sim.platform.partiql_insert refused them.

Correct, written as a team would: the claim and the order row (the amount, the object it came from) in
one transaction, the values in the statements (the key a hex digest). On a cancelled transaction it reads
the claim (strongly consistent): an order booked is skipped however late it comes; one first attempted
over 23 hours ago and never booked is left to a person (Stripe keeps a key "at least 24 hours":
https://docs.stripe.com/idempotency); otherwise it charges under the same key (Stripe replays). The key
is the bucket, the account and the order id. Books the charge once on the claim. Must HOLD in every
family."""
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
        digest = hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        key, now = "charge#order#" + digest, time.time()
        try:
            dynamodb.execute_transaction(TransactStatements=[
                {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': '{key}', 'first_attempt_at': {int(now)}}}"},
                {"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'pk': 'order#{digest}', "
                              f"'amount_cents': {int(order['amount_cents'])}, 'object': '{digest}'}}"}])
        except dynamodb.exceptions.TransactionCanceledException:
            item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
            if item is None:
                raise  # cancelled for another reason than the claim: let Lambda try again
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
