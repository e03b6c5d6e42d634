"""Wrong: an EventBridge-fed handler (S3 -> EventBridge `Object Created` -> Lambda) that claims each
file by its bucket and key ("one file, one order": `detail.object.key`, not URL-encoded on EventBridge:
https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html) with a conditional put, and skips
a file it has claimed. A second order uploaded at the same name is a new object, sent to EventBridge as
its own `Object Created` event with the same key: it is skipped as a duplicate, never charged, nothing
in the failure queue. Must BREAK (silent_loss) under --trigger eventbridge, in the overwrite family."""
import hashlib
import json
import os

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    detail = event["detail"]
    bucket, name = detail["bucket"]["name"], detail["object"]["key"]
    key = hashlib.sha256(f"{bucket}/{name}".encode()).hexdigest()
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": f"file#{key}"}}, ConditionExpression="attribute_not_exists(pk)",
                          ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if "charge_id" in error.response.get("Item", {}):
            return {"status": "duplicate"}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, VersionId=detail["object"]["version-id"])["Body"].read())
    charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{name} {order['order_id']}",
                             idempotency_key=key)
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": f"file#{key}"}}, UpdateExpression="SET charge_id = :c",
                         ExpressionAttributeValues={":c": {"S": charge.id}})
    return {"status": "charged"}
