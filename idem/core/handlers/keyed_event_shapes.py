"""What a reader may drop from the handler to copy (keyed.py): shapes and modes the production stack never uses.

The stack gives the function S3's records directly, or in SQS messages (keyed_events.py reads
both), and names each order in its file (ORDER_IDENTITY=order-id, keyed_orders.py). Other
deployments wrap the same news otherwise: S3 -> SNS -> Lambda, S3 -> SNS -> SQS -> Lambda, and
EventBridge's `Object Created` events; and the workbook teaches two modes that read no order file
(ORDER_IDENTITY=object-name, upload: chapter 03). Copy this file beside keyed_events.py to read
those too (keyed_settings.optional_file finds it); leave it out, and those events are refused as
malformed (the event reaches the failure queue), never guessed at, and those modes refuse to start.
Shapes as Powertools for AWS Lambda's parser models them (SnsEvent, SnsSqsEnvelope):
https://docs.aws.amazon.com/powertools/typescript/2.14.0/api/types/_aws-lambda-powertools_parser.types.SnsEvent.html
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import (BUCKET_RULE, HEX_RULE, EventError, S3Object, Skipped, _kind, _text, _version,
                              json_message, key_of, size_of, unless_folder_marker)
    from keyed_events import message_leaves as s3_message_leaves
    from keyed_orders import OrderRef, Upload, _order_key
    from keyed_settings import ConfigError, NeedsAttention, Settings
else:
    from .keyed_events import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        BUCKET_RULE, HEX_RULE, EventError, S3Object, Skipped, _kind, _text, _version, json_message, key_of, size_of,
        unless_folder_marker)
    from .keyed_events import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        message_leaves as s3_message_leaves)
    from .keyed_orders import OrderRef, Upload, _order_key  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ConfigError, NeedsAttention, Settings)

#: Envelope event sources: what they are called in a reason, and where the message is.
ENVELOPES = {"aws:sqs": ("SQS message", "body"), "aws:sns": ("SNS message", "Sns.Message")}


def is_eventbridge(event: Any) -> bool:
    """An event EventBridge delivers for S3 (`source: aws.s3`), whatever parts it lacks."""
    return isinstance(event, Mapping) and event.get("source") == "aws.s3" \
        and ("detail" in event or "detail-type" in event)


def is_sns_notification(message: Any) -> bool:
    """SNS's message as SQS receives it (raw message delivery off): `Type: Notification`."""
    return isinstance(message, Mapping) and message.get("Type") == "Notification" and "Message" in message


def top_level(event: Mapping[str, Any]) -> Iterator[tuple[int, S3Object | Skipped]] | None:
    """An EventBridge event given to the function itself: its one upload; None for any other event."""
    return iter([(0, eventbridge_leaf(event, 0, "EventBridge: "))]) if is_eventbridge(event) else None


def sns_leaves(record: Mapping[str, Any], index: int, where: str) -> Iterator[S3Object | Skipped]:
    """The S3 records in an SNS message (S3 -> SNS -> Lambda); a message that is no S3 event is ignored."""
    where += "SNS message: "
    try:
        text = _text(record, "Sns.Message", required=True, limit=None)
    except EventError as problem:
        yield Skipped(index, f"{where}{problem}", True)
        return
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # not text S3 sent: another publisher's, ignored
        yield Skipped(index, f"{where}Sns.Message is not JSON, so not an S3 event", False)
        return
    yield from message_leaves_of(message, index, where, from_sqs=False)


def message_leaves(message: Any, index: int, where: str, from_sqs: bool) -> Iterator[S3Object | Skipped]:
    """An SQS message's S3 records, unwrapping an SNS notification or reading an EventBridge event."""
    if from_sqs and is_sns_notification(message):  # S3 -> SNS -> SQS
        where += "SNS notification: "
        try:
            message = json_message(message, "Message")
        except EventError as problem:
            yield Skipped(index, f"{where}{problem}", True)
            return
    yield from message_leaves_of(message, index, where, from_sqs)


def message_leaves_of(message: Any, index: int, where: str, from_sqs: bool) -> Iterator[S3Object | Skipped]:
    """An envelope's message: an EventBridge event's upload, or its S3 records."""
    if is_eventbridge(message):
        yield eventbridge_leaf(message, index, f"{where}EventBridge: ")
    else:
        yield from s3_message_leaves(message, index, where, malformed=from_sqs)


def eventbridge_leaf(event: Mapping[str, Any], index: int, where: str) -> S3Object | Skipped:
    """EventBridge's `Object Created` event: the same facts, another shape, key not encoded.

    Shape: https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html (only the
    bucket name and the key are certain to be there; size, etag, version-id and sequencer
    may be absent).
    """
    try:
        kind = _text(event, "detail-type", required=True)
        if kind != "Object Created":
            return Skipped(index, f"{where}{kind!r} ignored (not an object creation)", False)
        if not isinstance(event.get("detail"), Mapping):
            raise EventError(f"detail must be a JSON object, got {_kind(event.get('detail'))}")
        obj = S3Object(
            bucket=_text(event, "detail.bucket.name", required=True, limit=255, rule=BUCKET_RULE),
            key=key_of(_text(event, "detail.object.key", required=True)),
            size=size_of(event, "detail.object.size", required=False),
            etag=_text(event, "detail.object.etag"),
            sequencer=_text(event, "detail.object.sequencer", limit=64, rule=HEX_RULE),
            version_id=_version(event, "detail.object.version-id"),
            event_name="ObjectCreated:" + (_text(event, "detail.reason") or "PutObject"),
            event_time=_text(event, "time"),
            region=_text(event, "region") or "us-east-1",
        )
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return unless_folder_marker(obj, index, where)


# -- the ORDER_IDENTITY modes that read no order file: every upload costs PRICE_PER_UPLOAD_CENTS ------------
def check_settings(settings: Settings) -> None:
    """At cold start (Settings): a mode that reads no order file needs the price of one upload."""
    if not settings.price_per_upload_cents:
        raise ConfigError(f"ORDER_IDENTITY={settings.order_identity} reads no order file: set PRICE_PER_UPLOAD_CENTS, "
                          "the price of one upload (nothing is charged without it)")


def identify(upload: Upload, identity: str) -> OrderRef:
    """The order of an upload in a mode that reads no file: its name (object-name) or the upload itself (upload)."""
    name = f"{upload.bucket}/{upload.key}"
    if identity == "object-name":  # the name is written once (If-None-Match: *), so it is the order
        return OrderRef(_order_key("name", f"{upload.bucket}\n{upload.key}"), name, f"s3://{name}", upload)
    if not upload.versioned and not upload.sequencer:  # EventBridge may omit it (ev-events.html)
        return OrderRef(upload.idempotency_key, upload.source, upload.reference, upload, problem=NeedsAttention(
            f"{upload.reference}: unversioned and with no sequencer, this upload cannot be told from another "
            "upload of the same name with the same bytes; nothing was charged: enable versioning, or use "
            "ORDER_IDENTITY=order-id"))
    return OrderRef(upload.idempotency_key, upload.source, upload.reference, upload)  # one charge per upload
