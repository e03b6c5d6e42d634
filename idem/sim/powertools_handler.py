"""A Lambda handler for S3 uploads, guarded by Powertools' idempotency utility, as you write it.

The `@idempotent` decorator wraps the handler itself. Its key is a JMESPath expression over the
raw S3 event, and its records live in a DynamoDB table of their own (`IDEMPOTENCY_TABLE`). The
handler charges the customer and books the charge in the ledger (`LEDGER_TABLE`), both safe to
run again: Powertools deletes its record when the handler raises, and Lambda's retry runs the
whole handler a second time. Nothing here is the workbook's but `make_provider`, which the local
runtime replaces with its provider stand-in (on Lambda: your provider's client, Stripe's say).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any
from urllib.parse import unquote_plus

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

PRICE_CENTS = 500
#: The upload, never the attempt: the sequencer tells two uploads of one name apart when the
#: bucket is not versioned (versionId is then None, and Powertools would take
#: [bucket, key, None] for a key: it only refuses a key whose every value is None).
KEY = "Records[0].s3.[bucket.name, object.key, object.versionId, object.sequencer]"

config = IdempotencyConfig(
    event_key_jmespath=KEY,
    raise_on_no_idempotency_key=True,  # a key of nothing but None fails loudly
    expires_after_seconds=24 * 60 * 60,  # outlive Lambda's six hours of retries (chapter 07)
)
persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"])
dynamodb = boto3.client("dynamodb")
LEDGER_TABLE = os.environ["LEDGER_TABLE"]


def make_provider() -> Any:
    """Your payment provider's client; its charge must take an idempotency key."""
    raise RuntimeError("make_provider() builds no payment client yet: replace it with yours")


@idempotent(config=config, persistence_store=persistence)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    (record,) = event["Records"]  # S3 sends one record per notification
    s3 = record["s3"]
    bucket, name = s3["bucket"]["name"], unquote_plus(s3["object"]["key"])
    upload = [bucket, name, s3["object"].get("versionId"), s3["object"]["sequencer"]]
    # Stripe's keys are at most 255 characters: a hash of the upload fits whatever its name.
    key = "charge#" + hashlib.sha256(json.dumps(upload).encode()).hexdigest()
    account = name.split("/", 1)[0]
    charge = make_provider().charge(customer=account, amount=PRICE_CENTS, currency="usd",
                                    reference=f"s3://{bucket}/{name}", idempotency_key=key)
    book_once(key, account, charge.id)
    return {"status": "charged", "charge_id": charge.id}


def book_once(key: str, account: str, charge_id: str) -> None:
    """One ledger line per key, put only if absent: a second run of the handler books nothing."""
    try:
        dynamodb.put_item(
            TableName=LEDGER_TABLE, ConditionExpression="attribute_not_exists(pk)",
            Item={"pk": {"S": key}, "status": {"S": "done"}, "account": {"S": account},
                  "cents": {"N": str(PRICE_CENTS)}, "charge_id": {"S": charge_id},
                  "booked_at": {"N": str(time.time())}})
    except dynamodb.exceptions.ConditionalCheckFailedException:
        pass  # booked by an earlier run of this handler for the same upload
