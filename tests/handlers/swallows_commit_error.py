"""Wrong: the same charge, but an error writing the ledger line is logged and swallowed. Money is
taken, no line is booked, nothing is retried and nothing alerts. Must BREAK (silent_mismatch)."""
import os

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        s3 = record["s3"]
        key = f"{s3['bucket']['name']}/{s3['object']['key']}#{s3['object']['eTag']}"  # one per order (docs/one_charge_per_order.md)
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                 idempotency_key=key)
        try:
            dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": key}, "charge_id": {"S": charge.id}})
        except Exception as error:  # "the charge went through, don't fail the whole batch"
            print(f"could not book {charge.id}: {error}")
    return {"ok": True}
