"""The keyed handler behind an SQS event source mapping (prod's S3 -> SQS -> Lambda), for the outage
scenario: each message is one S3 event, charged by keyed's own `KeyedCharger` (claim, charge with
the order's key, commit); a message whose upload failed is named in `batchItemFailures`, so only it
comes back after the visibility timeout, and the rest of the batch is deleted
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).

The local runtime loads a fresh copy of this module per cold container and replaces
`make_provider` with its provider (the stand-in, failing during the outage).
"""
from __future__ import annotations

import inspect
import json
import os
from typing import Any

import boto3

from idem.core.handlers.keyed import KeyedCharger, Upload, settings_from_env

try:  # where keyed's event parsing lives once it is split into siblings
    from idem.core.handlers.keyed_events import read_event
except ImportError:
    from idem.core.handlers.keyed import read_event  # type: ignore[attr-defined, no-redef]

_charger: KeyedCharger | None = None


def make_provider() -> Any:
    raise RuntimeError("the local runtime replaces make_provider with its provider")


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    global _charger
    if _charger is None:  # a cold start; keyed reads the order file with S3 when it keys by order
        reads_orders = "s3" in inspect.signature(KeyedCharger).parameters
        _charger = KeyedCharger(boto3.client("dynamodb"), make_provider(), settings_from_env(os.environ),
                                **({"s3": boto3.client("s3")} if reads_orders else {}))
    failures = []
    for message in event["Records"]:
        try:
            for obj in read_event(json.loads(message["body"])).objects:
                _charger.charge_once(Upload.of(obj), context.get_remaining_time_in_millis())
        except Exception:  # this message only: the others are done and deleted
            failures.append({"itemIdentifier": message["messageId"]})
    return {"batchItemFailures": failures}
