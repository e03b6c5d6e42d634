"""S3 event notifications: build them in the exact AWS shape, and read them back.

The reading half is the handler to copy's own parser (`idem/core/handlers/keyed.py`), imported
from there: one code path for the handler, the CLI and the workbook.

S3 delivers `{"Records": [...]}` to the function. The object key arrives URL-encoded
(`my file.csv` arrives as `my+file.csv`); `read_event` decodes it. S3 also sends an
`s3:TestEvent` whenever a notification configuration changes, and EventBridge delivers
its own shape of the same news: both are recognised here rather than crashed on.

How `read_event` treats what it is given (no input makes it raise anything but EventError):

- An `ObjectCreated:*` record with a bucket, a key and a size is an upload: it is charged.
- Skipped, not an error (logged, the invocation succeeds): other event types (deletes,
  restores, lifecycle expirations, ...), `s3:TestEvent`, an empty record list, folder
  markers (a zero-byte object whose key ends in `/`, what the console's "Create folder"
  makes), and SNS or SQS messages that hold no S3 event.
- Skipped as malformed (logged; the good records are still charged, then the invocation
  fails so the event is retried and reaches the failure queue): any field this code reads
  that is missing, null, of the wrong type or impossible for S3 (an empty key, a key over
  1,024 bytes, a negative size or one over 48.8 TiB, a bucket name with a `/`), and every
  record past the first MAX_RECORDS.
- Rejected as a whole (EventError): an event that is not a JSON object, or an object with
  no `Records` list that is neither a test event nor an EventBridge S3 event.

Envelopes: S3 -> SNS -> Lambda, S3 -> SQS -> Lambda and S3 -> SNS -> SQS -> Lambda are real
deployments. Their records (`EventSource: aws:sns` with the S3 event as the JSON text of
`Sns.Message`; `eventSource: aws:sqs` with it in `body`, or with an SNS notification there
whose `Message` holds it) are unwrapped into the S3 records they carry. Shapes as
Powertools for AWS Lambda's parser models them (SnsEvent, S3SqsEventNotification,
SnsSqsEnvelope): https://docs.aws.amazon.com/powertools/typescript/2.14.0/api/types/_aws-lambda-powertools_parser.types.SnsEvent.html
and .../2.13.0/api/types/_aws-lambda-powertools_parser.types.S3SqsEventNotification.html
"""
from __future__ import annotations

import json
from typing import Any, Mapping
from urllib.parse import quote_plus

from .handlers import keyed_event_shapes, keyed_events
from .handlers.keyed_event_shapes import ENVELOPES, is_eventbridge
from .handlers.keyed_events import (BUCKET_NAME, MAX_FIELD_BYTES, MAX_KEY_BYTES, MAX_LOGGED_SKIPS, MAX_OBJECT_SIZE,
                                    MAX_RECORDS, SUPPORTED_MAJOR_VERSION, EventBatch, EventError, S3Object, Skipped,
                                    is_test_event)
from .handlers.keyed_settings import CHARGE_EVENTS


def read_event(event: Any, charge_events: tuple[str, ...] = CHARGE_EVENTS) -> EventBatch:
    """The handler's own parser (keyed_events.read_event), with every shape it can read: SNS and
    EventBridge too (keyed_event_shapes.py), as the handler reads them when that file is copied."""
    return keyed_events.read_event(event, charge_events, keyed_event_shapes)

#: How deep `load_event` lets JSON nest. An S3 event nests 5 levels (envelopes carry theirs
#: as text); the local runtime copies events with copy.deepcopy, which recurses.
MAX_NESTING = 100

__all__ = ["BUCKET_NAME", "ENVELOPES", "MAX_FIELD_BYTES", "MAX_KEY_BYTES", "MAX_LOGGED_SKIPS", "MAX_NESTING",
           "MAX_OBJECT_SIZE", "MAX_RECORDS", "SUPPORTED_MAJOR_VERSION", "EventBatch", "EventError", "S3Object",
           "Skipped", "encode_key", "is_eventbridge", "is_test_event", "load_event", "nesting_depth",
           "newer_sequencer", "read_event", "s3_event", "s3_record", "s3_test_event"]


def encode_key(key: str) -> str:
    """URL-encode an object key the way S3 writes it into an event (spaces become `+`)."""
    return quote_plus(key, safe="/")


def s3_record(
    obj: S3Object,
    *,
    request_id: str = "C3D13FE58DE4C810",
    configuration_id: str = "charge-on-upload",
    event_version: str = "2.1",
) -> dict[str, Any]:
    """One record of an S3 event notification, shaped exactly as S3 sends it."""
    s3_object: dict[str, Any] = {
        "key": encode_key(obj.key),
        "size": obj.size,
        "eTag": obj.etag,
        "sequencer": obj.sequencer,
    }
    if obj.version_id is not None:
        s3_object["versionId"] = obj.version_id
    return {
        "eventVersion": event_version,
        "eventSource": "aws:s3",
        "awsRegion": obj.region,
        "eventTime": obj.event_time,
        "eventName": obj.event_name,
        "userIdentity": {"principalId": "AWS:AIDAJDPLRKLG7UEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {
            "x-amz-request-id": request_id,
            "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD",
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": configuration_id,
            "bucket": {
                "name": obj.bucket,
                "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                "arn": f"arn:aws:s3:::{obj.bucket}",
            },
            "object": s3_object,
        },
    }


def s3_event(*objects: S3Object) -> dict[str, Any]:
    """A whole notification: S3 usually sends one record, but the shape allows several."""
    return {"Records": [s3_record(o) for o in objects]}


def s3_test_event(bucket: str, time: str = "2026-01-01T00:00:00.000Z") -> dict[str, Any]:
    """What S3 sends when a notification configuration is created or changed."""
    return {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": time,
        "Bucket": bucket,
        "RequestId": "5582815E1AEA5ADF",
        "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE",
    }


# -- reading text ------------------------------------------------------------------------
def load_event(text: str) -> Any:
    """Parse an event captured as JSON text, with an error that says what to fix."""
    if not text.strip():
        raise EventError("the event is empty: expected the JSON S3 sends, {\"Records\": [...]}")
    try:
        event = json.loads(text)
    except json.JSONDecodeError as bad:
        raise EventError(f"not valid JSON (line {bad.lineno}, column {bad.colno}: {bad.msg})") from None
    except RecursionError:
        # Lambda's Python runtime decodes the event with json.loads before the handler runs and
        # fails the invocation (Runtime.UnmarshalError) when it cannot: the handler never sees it.
        # (aws-lambda-python-runtime-interface-client, awslambdaric/lambda_runtime_marshaller.py)
        raise EventError("the JSON nests too deeply to decode (an S3 event nests 5 levels); "
                         "Lambda's Python runtime would refuse it before the handler runs") from None
    except ValueError as bad:  # e.g. an integer of more than 4,300 digits
        raise EventError(f"not readable JSON: {str(bad).split(';')[0]}") from None
    if nesting_depth(event, MAX_NESTING) > MAX_NESTING:
        raise EventError(f"the JSON nests more than {MAX_NESTING} levels deep (an S3 event nests 5); "
                         "this tool does not replay such events")
    return event


def nesting_depth(value: Any, stop: int) -> int:
    """How deep lists and objects nest in `value` (a scalar is 0), looking no deeper than
    `stop` + 1 levels. A loop, not recursion: any depth is safe to measure."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children: Any = item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= stop:
            pending.extend((child, depth + 1) for child in children)
    return deepest


def newer_sequencer(a: str, b: str) -> bool:
    """True when sequencer `a` is later than `b` (same object key only).

    Sequencers differ in length; S3 says to right-pad the shorter one with zeros and
    compare them as hexadecimal numbers.
    """
    width = max(len(a), len(b))
    return int(a.ljust(width, "0"), 16) > int(b.ljust(width, "0"), 16)
