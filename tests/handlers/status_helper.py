"""Wrong, as a team writes it with one status helper: every status write goes through `set_status`, the same
UpdateExpression whether it books a charge ("done") or parks an order ("parked"). An order whose file changed
after its event (S3 answers the read's IfMatch with 412 PreconditionFailed:
https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html) is parked for a person and the upload fails,
so the failure queue holds it. When the park itself fails (a throttle botocore gave up on: "Your request is
eventually successful, unless your retry queue is too large to finish",
https://docs.aws.amazon.com/botocore/latest/reference/services/dynamodb/client/exceptions/ProvisionedThroughputExceededException.html),
it logs a line for the alarm and returns success: the order is neither charged, parked nor in the failure
queue. Its park is the same request as its clean run's booking but for the value it writes, at the same
boundary (`UpdateItem #1`). Correct verdict: BREAKS (silent_loss), in the second round.

Its twin, `raises_handler`, is right where it is wrong: a park that fails raises, so the upload fails and the
failure queue holds it. Correct verdict: HOLDS (tests/test_check_roles.py)."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def set_status(dynamodb, key, status, detail):
    dynamodb.update_item(TableName=TABLE, Key={"pk": {"S": key}}, UpdateExpression="SET #s = :s, detail = :d",
                         ExpressionAttributeNames={"#s": "status"},
                         ExpressionAttributeValues={":s": {"S": status}, ":d": {"S": detail}})


def lambda_handler(event, context):
    return charge_each(event, swallow_park_errors=True)


def raises_handler(event, context):
    return charge_each(event, swallow_park_errors=False)


def charge_each(event, swallow_park_errors):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    for record in event["Records"]:
        bucket, obj = record["s3"]["bucket"]["name"], record["s3"]["object"]
        name = unquote_plus(obj["key"])
        key = f"upload#{bucket}/{name}#{obj['eTag'].strip(chr(34))}"  # one upload, its bytes
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "status": {"S": "in_progress"}},
                              ConditionExpression="attribute_not_exists(pk)")
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue  # the same bytes again: charged already
            raise
        read = {"VersionId": obj["versionId"]} if obj.get("versionId") else {"IfMatch": obj["eTag"]}
        try:
            order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
        except ClientError as changed:  # the file is not the event's any more: a person must look
            try:
                set_status(dynamodb, key, "parked", f"file changed: {changed.response['Error']['Code']}")
            except ClientError:
                if not swallow_park_errors:
                    raise
                print(f"PARK FAILED {key}: the alarm on this line tells the team")
                continue
            raise RuntimeError(f"{key}: parked, the file changed after its event") from None
        charge = provider.charge(customer=name.split("/")[0], amount=order["amount_cents"], currency="usd",
                                 reference=key, idempotency_key=hashlib.sha256(key.encode()).hexdigest())
        set_status(dynamodb, key, "done", charge.id)
    return {"status": "ok"}
