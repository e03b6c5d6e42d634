"""Wrong, as a team writes it to save a table: it remembers each upload it charged with a marker file
in /tmp, and skips an upload whose marker is there. /tmp belongs to one execution environment
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html): a copy of the
event served by another environment finds no marker and charges again. A check whose environments
shared one /tmp would see the marker and say holds."""
import hashlib
import os
from urllib.parse import unquote_plus

import boto3

TABLE = os.environ["LEDGER_TABLE"]


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider, dynamodb = make_provider(), boto3.client("dynamodb")
    for record in event["Records"]:
        bucket, name = record["s3"]["bucket"]["name"], unquote_plus(record["s3"]["object"]["key"])
        digest = hashlib.sha256(f"{bucket}/{name}/{record['s3']['object'].get('eTag')}".encode()).hexdigest()
        marker = f"/tmp/charged-{digest}"
        if os.path.exists(marker):
            continue
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=f"{bucket}/{name}",
                                 idempotency_key=None)
        with open(marker, "w") as done:
            done.write(charge.id)
        dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "charge#" + charge.id}, "charge_id": {"S": charge.id}})
    return {"ok": True}
