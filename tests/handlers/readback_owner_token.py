"""Wrong: claims the order with an unconditional put of a fresh token ("last writer wins"), then reads the claim
back without ConsistentRead to see whether it won, and skips the order when the token is not its own. A read
right after a write "may not reflect the results of a recently completed write operation"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html): it finds no
claim, takes it for another invocation's, and the order is never charged. The check's clean run reads the latest
items (the charge it is measured against); its schedules read as DynamoDB may. Must BREAK (silent_loss).
Before the clean run read fresh, the check stopped with exit 2 ("made no charge on a clean run")."""
import hashlib
import json
import os
import uuid
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
        key = "order#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
        done = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item", {})
        if "charge_id" in done:
            continue
        token = str(uuid.uuid4())
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "token": {"S": token}})
        mine = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": key}}).get("Item", {})
        if mine.get("token", {}).get("S") != token:
            print(f"{key}: another invocation holds it")
            continue
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=key)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"line#{charge.id}"}, "charge_id": {"S": charge.id}})
        dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET charge_id = :c",
                             ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"ok": True}
