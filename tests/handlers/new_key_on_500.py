"""Wrong: a 500 from the provider is retried at once with a new key ("the old key is poisoned").
Under Stripe's rules the first request may have executed: two charges. Must BREAK
(double_charge), which only a check that counts charges made under a saved 500 can see."""
import os
import uuid

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['versionId']}"
        try:
            charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                     idempotency_key=key)
        except Exception as error:
            if getattr(error, "http_status", None) != 500:
                raise
            charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                     idempotency_key=f"{key}#{uuid.uuid4()}")
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
    return {"ok": True}
