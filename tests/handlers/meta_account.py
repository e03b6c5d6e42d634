"""Wrong, as a team writes it when its upload portal sets the account as object metadata: the account is
the object's user-defined metadata `x-amz-meta-account` (GetObject's `Metadata["account"]`) when present,
else the key's first folder; the order is keyed by (account, order_id) and who pays is that account's
linked customer (the mapping). But user-defined metadata is whatever the uploader's PUT sends
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html): Bob, allowed to write only
under bob/, uploads bob/o.json with `x-amz-meta-account: alice` and Alice pays (docs/money_contract.md
section 2: the account is the key's first folder, "a source the uploader cannot write")."""
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


def order_key(bucket, account, order):
    return "charge#order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        got = s3.get_object(Bucket=bucket, Key=name, **read)
        order = json.loads(got["Body"].read())
        account = got.get("Metadata", {}).get("account") or name.split("/", 1)[0]  # the portal's tag wins
        key, now = order_key(bucket, account, order), time.time()
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "first_attempt_at": {"N": str(now)}},
                              ConditionExpression="attribute_not_exists(pk)",
                              ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except dynamodb.exceptions.ConditionalCheckFailedException as taken:
            item = taken.response.get("Item", {})
            if "charge_id" in item:
                continue  # booked already: a copy, a retry, or the same order sent again
            if now - float(item["first_attempt_at"]["N"]) > KEY_WINDOW_SECONDS:
                raise RuntimeError(f"{key}: first attempted over 23 h ago and never booked; "
                                   "Stripe may have pruned its key: a person must look") from None
        linked = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"account#{account}"}},
                                   ConsistentRead=True).get("Item")
        if not linked:
            raise RuntimeError(f"account {account} has no linked customer: run idem customers link")
        charge = provider.charge(customer=linked["customer"]["S"], amount=order["amount_cents"], currency="usd",
                                 reference=f"{bucket}/{name}", idempotency_key=key)
        try:
            dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                                 ConditionExpression="attribute_not_exists(charge_id) OR charge_id = :c",
                                 ExpressionAttributeValues={":c": {"S": charge.id}})
        except dynamodb.exceptions.ConditionalCheckFailedException:
            raise RuntimeError(f"{key}: booked with another charge than {charge.id}") from None
    return {"ok": True}
