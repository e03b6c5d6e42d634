"""Wrong: the same notice on a standard queue, which keeps no deduplication id: a retry after
the send sends a second notice.
Must BREAK with --effect sqs:SendMessage (double_effect)."""
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]
sqs = boto3.client("sqs")
QUEUE = sqs.create_queue(QueueName="notices")["QueueUrl"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}},
                              ConditionExpression="attribute_not_exists(pk)")
        except dynamodb.exceptions.ConditionalCheckFailedException:
            pass
        sqs.send_message(QueueUrl=QUEUE, MessageBody=f"charged {charge.id}")
    return {"ok": True}
