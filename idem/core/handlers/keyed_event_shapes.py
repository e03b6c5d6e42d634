"""The event shapes the stack never sends, for the handler to copy (keyed.py): optional.

The stack gives the function S3's records directly, or in SQS messages (keyed_events.py reads
both). Other deployments wrap the same news otherwise: S3 -> SNS -> Lambda, S3 -> SNS -> SQS ->
Lambda, and EventBridge's `Object Created` events. Copy this file beside keyed_events.py to read
those too (keyed_log.py imports it when it is there); leave it out, and they are refused as malformed (the event reaches the failure queue),
never guessed at. Shapes as Powertools for AWS Lambda's parser models them (SnsEvent,
SnsSqsEnvelope): https://docs.aws.amazon.com/powertools/typescript/2.14.0/api/types/_aws-lambda-powertools_parser.types.SnsEvent.html
It imports only the standard library and keyed_events.py.
"""
from __future__ import annotations

from typing import Any, Mapping

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import (EventError, S3Object, Skipped, _bucket, _is_eventbridge, _key, _kind, _sequencer,
                              _size, _text, _unless_folder_marker, _version)
else:
    from .keyed_events import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        EventError, S3Object, Skipped, _bucket, _is_eventbridge, _key, _kind, _sequencer, _size, _text,
        _unless_folder_marker, _version)

#: Envelope event sources: what they are called in a reason, and where the message is.
ENVELOPES = {"aws:sqs": ("SQS message", "body"), "aws:sns": ("SNS message", "Sns.Message")}

is_eventbridge = _is_eventbridge


def is_sns_notification(message: Any) -> bool:
    """SNS's message as SQS receives it (raw message delivery off): `Type: Notification`."""
    return isinstance(message, Mapping) and message.get("Type") == "Notification" and "Message" in message


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
            bucket=_bucket(event, "detail.bucket.name"),
            key=_key(_text(event, "detail.object.key", required=True)),
            size=_size(event, "detail.object.size", required=False),
            etag=_text(event, "detail.object.etag"),
            sequencer=_sequencer(event, "detail.object.sequencer"),
            version_id=_version(event, "detail.object.version-id"),
            event_name="ObjectCreated:" + (_text(event, "detail.reason") or "PutObject"),
            event_time=_text(event, "time"),
            region=_text(event, "region") or "us-east-1",
        )
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return _unless_folder_marker(obj, index, where)
