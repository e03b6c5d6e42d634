"""Right as far as its own copies go: sqs_archive_same_bucket, but it skips every object under its own
`archive/` folder. The bucket notifies the queue of every object created in it, so each copy's message still
comes back to it, and does nothing: no second charge, no failure. Must HOLD on the clean run and in the
family uploads where its twin breaks. Like its twin it charges before it looks at its books, so a message
redelivered past Stripe's 24-hour key window is charged again: it breaks in the families late, retry_ends
and again (double_charge), with or without its copies coming back."""
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
    if name.startswith(ARCHIVE):
        return  # our own copy of an order already charged: its event comes back, as for any object
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
