"""Wrong: keyed_books, but it books the charge in one TransactWriteItems (the ledger line, conditioned
on its absence, and the claim marked booked) and reads any TransactionCanceledException as "a copy
booked it already". DynamoDB cancels a transaction not only when "a condition in one of the condition
expressions is not met" but when "there is insufficient provisioned capacity for the transaction to be
completed" or another transaction on the same item conflicts
(https://docs.aws.amazon.com/sdk-for-python/v1/reference/clients/dynamodb/errors/TransactionCanceledException/),
its CancellationReasons saying which (ThrottlingError, ProvisionedThroughputExceeded, TransactionConflict).
A transaction cancelled by a throttle is read as booked: the charge stays without books, and the
invocation succeeds. Must BREAK (silent_mismatch: a charge with no books) in the runs family."""
import hashlib
import json
import os
import time
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
        key = "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        now = time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"claim#{key}"}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            claim = taken.response.get("Item", {})
            if claim.get("booked", {}).get("BOOL"):
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(claim["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; Stripe may "
                                   "have pruned its key: a person must look") from None
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        try:
            dynamodb.transact_write_items(TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": key}, "charge_id": {"S": charge.id}},
                         "ConditionExpression": "attribute_not_exists(pk)"}},
                {"Update": {"TableName": TABLE, "Key": {"pk": {"S": f"claim#{key}"}}, "UpdateExpression": "SET booked = :t",
                            "ExpressionAttributeValues": {":t": {"BOOL": True}}}}])
        except dynamodb.exceptions.TransactionCanceledException:
            print(f"{key}: booked already by a copy")
    return {"ok": True}
