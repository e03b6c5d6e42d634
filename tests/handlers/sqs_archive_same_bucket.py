"""Wrong: S3 -> SQS -> Lambda (ReportBatchItemFailures on), each order charged once per account and order
id, and once booked, filed away with CopyObject to `archive/` in the same bucket. The bucket notifies the
queue of every object created in it, so the copy is one more message: "if the bucket triggers a function
each time an object is uploaded, and the function uploads an object to the bucket, then the function
indirectly triggers itself" (https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html). The copy's first
folder, `archive`, reads as another account: the same order is charged a second time. Must BREAK under
--trigger sqs (double_charge) on the clean run, as adv4_archive_same_bucket does on S3."""
import hashlib
import json
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]
ARCHIVE = "archive/"


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb, s3 = make_provider(), boto3.client("dynamodb"), boto3.client("s3")
    failures = []
    for message in event["Records"]:
        try:
            for record in json.loads(message["body"]).get("Records", []):
                charge_and_archive(provider, dynamodb, s3, record["s3"])
        except Exception as error:  # this message only: the others are done
            print(f"{message['messageId']} failed: {type(error).__name__}: {error}")
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}


def charge_and_archive(provider, dynamodb, s3, where):
    bucket, name = where["bucket"]["name"], unquote_plus(where["object"]["key"])
    read = {"VersionId": where["object"]["versionId"]} if where["object"].get("versionId") else {}
    order = json.loads(s3.get_object(Bucket=bucket, Key=name, **read)["Body"].read())
    account = name.split("/", 1)[0]
    key = "charge#" + hashlib.sha256(f"{bucket}\n{account}\n{order['order_id']}".encode()).hexdigest()
    charge = provider.charge(customer="acct-1", amount=order["amount_cents"], currency=order["currency"],
                             reference=f"{bucket}/{name}", idempotency_key=key)
    try:
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                          ConditionExpression="attribute_not_exists(pk)")
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked already: a redelivery, whose charge the provider replayed
    s3.copy_object(Bucket=bucket, Key=ARCHIVE + name, CopySource={"Bucket": bucket, "Key": name})
