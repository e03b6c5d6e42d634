"""Reading S3's events for the handler to copy (keyed.py): one parser, failing closed.

Every record is either an upload, a record that is not ours (logged, skipped), or malformed
(logged, and the invocation fails after the good ones so the event reaches the failure queue).
It reads the shapes the stack sends: S3's records, given to the function directly or in SQS
messages (S3 -> SQS -> Lambda, the production profile), and S3's test event. The shapes the
stack never sends (SNS messages, EventBridge events) are read by keyed_event_shapes.py when it is
copied beside this file; without it they are refused as malformed, never guessed at.
idem.core.events re-exports it: the workbook and the handler read events with the same code.
Copy it beside keyed.py; it imports only the standard library and keyed_settings.py.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any, Iterator, Mapping
from urllib.parse import unquote_plus

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_settings import CHARGE_EVENTS, IdemError
else:
    from .keyed_settings import CHARGE_EVENTS, IdemError  # type: ignore[import-not-found, no-redef, unused-ignore]

SUPPORTED_MAJOR_VERSION = "2"

#: Records read per invocation, counting those inside SNS and SQS messages. S3 sends one
#: record per event; an SQS batch can hold up to 10,000 messages (Lambda's SQS BatchSize
#: maximum, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html).
#: Each upload costs a few DynamoDB and provider calls (tens of milliseconds on AWS), so
#: 500 already fills a good part of the function's 30-second timeout. Records past it are
#: skipped as malformed, with this reason, so the event fails visibly instead of timing out.
MAX_RECORDS = 500
#: "The object key name ... with a maximum length of 1,024 bytes"
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_KEY_BYTES = 1024
#: An S3 object holds at most 10,000 parts of 5 GiB: 48.8 TiB ("Maximum object size 48.8 TiB",
#: https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html; older copies of that page say 5 TiB).
MAX_OBJECT_SIZE = 10_000 * 5 * 1024**3
#: S3's other short strings (eTag, sequencer, version id, time, region) stay far below this.
MAX_FIELD_BYTES = 1024
#: Bucket names: letters, digits, dots, hyphens (and, in old us-east-1 buckets, capitals
#: and underscores, up to 255 characters); never a `/`, which would blur bucket and key.
BUCKET_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
#: Skipped records logged one by one; the rest are counted in one more line.
MAX_LOGGED_SKIPS = 20
#: What a shape this file does not read is told (keyed_event_shapes.py reads SNS and EventBridge).
NOT_READ = "this handler reads S3's own events (direct, or in SQS); copy keyed_event_shapes.py to read it"
#: `shapes`, below: keyed_event_shapes.py as a module when it was copied (keyed_log.py imports it), or None.


class EventError(IdemError, ValueError):
    """An event (or one record of it) that is not what an S3 notification looks like."""


class _Foreign(Exception):
    """A well-formed envelope whose message is not an S3 event: not ours to handle."""


@dataclass(frozen=True)
class S3Object:
    """One `ObjectCreated` record, decoded: the facts every key recipe is built from."""

    bucket: str
    key: str  # URL-decoded, as the object is named in the bucket
    size: int
    etag: str
    sequencer: str
    version_id: str | None = None  # None when the bucket is not versioned
    event_name: str = "ObjectCreated:Put"
    event_time: str = ""
    region: str = "us-east-1"

    @property
    def uri(self) -> str:
        version = f"?versionId={self.version_id}" if self.version_id else ""
        return f"s3://{self.bucket}/{self.key}{version}"


@dataclass(frozen=True)
class Skipped:
    """A record the function did not process, and why."""

    index: int  # the position in the event's `Records` (of the envelope, when unwrapped)
    reason: str
    malformed: bool  # True: a broken record (an error); False: not ours to handle (a log line)


@dataclass
class EventBatch:
    """What one invocation's event holds."""

    objects: list[S3Object] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    test_event: bool = False
    origins: list[int] = field(default_factory=list)  # per object: its record's index in `Records`

    @property
    def malformed(self) -> list[Skipped]:
        return [s for s in self.skipped if s.malformed]

    def log_lines(self, limit: int = MAX_LOGGED_SKIPS) -> list[tuple[str, str]]:
        """(level, message) per skipped record, at most `limit` of them (malformed ones
        first, in record order), then one line counting the rest."""
        errors = self.malformed[:limit]
        others = [s for s in self.skipped if not s.malformed][:limit - len(errors)]
        chosen = {id(s) for s in errors + others}
        lines = [("error" if s.malformed else "info", f"record {s.index} skipped: {s.reason}")
                 for s in self.skipped if id(s) in chosen]
        rest, bad = len(self.skipped) - len(chosen), len(self.malformed) - len(errors)
        if rest:
            lines.append(("error" if bad else "info",
                          f"{rest} more records skipped ({bad} malformed), not logged one by one"))
        return lines


def is_test_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("Event") == "s3:TestEvent"


def _is_eventbridge(event: Any) -> bool:
    """An event EventBridge delivers for S3 (`source: aws.s3`), whatever parts it lacks."""
    return isinstance(event, Mapping) and event.get("source") == "aws.s3" and ("detail" in event or "detail-type" in event)


# -- reading an event --------------------------------------------------------------------
def read_event(event: Any, charge_events: tuple[str, ...] = CHARGE_EVENTS, shapes: ModuleType | None = None) -> EventBatch:
    """Split an invocation's event into objects to process and records to skip; `shapes` reads
    SNS and EventBridge (keyed_event_shapes.py), or they are refused.

    Raises EventError only when the event as a whole is not an S3 notification; a bad
    record inside a good event is reported in `skipped` so the good ones are not lost.
    Reads at most MAX_RECORDS records: the work is bounded whatever the event's size.
    """
    if is_test_event(event):
        return EventBatch(test_event=True)
    if not isinstance(event, Mapping):
        raise EventError(f"expected a JSON object, got {_kind(event)}")
    if _is_eventbridge(event):
        if shapes is None:
            raise EventError(f"an EventBridge event: {NOT_READ}")
        return _collect(((0, leaf) for leaf in [shapes.eventbridge_leaf(event, 0, "EventBridge: ")]), charge_events)
    records = event.get("Records")
    if records is None:
        keys = ", ".join(sorted(_show(k) for k in list(event)[:20])) or "none"
        raise EventError(
            f"not an S3 notification: no 'Records' list (top-level keys: {keys}); "
            "pass the event S3 delivers to Lambda, e.g. one captured from CloudWatch Logs"
        )
    if not isinstance(records, list):
        raise EventError(f"'Records' must be a list, got {_kind(records)}")
    return _collect(((index, leaf) for index, record in enumerate(records)
                     for leaf in _record_leaves(record, index, "", shapes, envelopes=True)), charge_events)


def _collect(leaves: Iterator[tuple[int, S3Object | Skipped]], charge_events: tuple[str, ...]) -> EventBatch:
    """Gather the first MAX_RECORDS leaves; one malformed skip stands for all the rest. An
    object created by an event not in `charge_events` is skipped, with its reason."""
    batch = EventBatch()
    for count, (index, leaf) in enumerate(leaves):
        if count == MAX_RECORDS:
            batch.skipped.append(Skipped(index, (
                f"over the limit: one invocation reads at most {MAX_RECORDS} records (about what "
                "fits in the function's timeout), so this one and all after it were not read; "
                "send smaller batches (e.g. a smaller SQS BatchSize)"), malformed=True))
            break
        if isinstance(leaf, S3Object) and leaf.event_name not in charge_events:
            batch.skipped.append(Skipped(index, f"{leaf.uri}: {leaf.event_name} does not create an order "
                                                f"(charged: {', '.join(charge_events)}); not charged", False))
        elif isinstance(leaf, S3Object):
            batch.objects.append(leaf)
            batch.origins.append(index)
        else:
            batch.skipped.append(leaf)
    return batch


def _record_leaves(record: Any, index: int, where: str, shapes: ModuleType | None = None, *,
                   envelopes: bool) -> Iterator[S3Object | Skipped]:
    """What one record holds: an object or a skip; for an SNS or SQS envelope, its records."""
    if not isinstance(record, Mapping):
        yield Skipped(index, f"{where}a record must be a JSON object, got {_kind(record)}", True)
        return
    source = record.get("eventSource", record.get("EventSource"))  # SNS spells it EventSource
    if source == "aws:s3":
        yield _s3_leaf(record, index, where)
    elif envelopes and source in ("aws:sqs", "aws:sns"):
        yield from _envelope_leaves(record, str(source), index, where, shapes)
    else:
        readable = "'aws:s3'" + (", or 'aws:sqs' / 'aws:sns' carrying S3 events" if envelopes else "")
        yield Skipped(index, f"{where}eventSource is {_show(source)}, not {readable}", True)


def _s3_leaf(record: Mapping[str, Any], index: int, where: str) -> S3Object | Skipped:
    """One S3 record: the upload it announces, or why it is skipped."""
    try:
        version = _text(record, "eventVersion", required=True)
        if version.split(".")[0] != SUPPORTED_MAJOR_VERSION:
            raise EventError(f"eventVersion {version!r} is not 2.x, the only version this code reads")
        name = _text(record, "eventName", required=True)
        if not name.startswith("ObjectCreated:"):
            return Skipped(index, f"{where}{name} is not an object creation", False)
        obj = S3Object(
            bucket=_bucket(record, "s3.bucket.name"),
            key=_key(unquote_plus(_text(record, "s3.object.key", required=True,
                                        limit=3 * MAX_KEY_BYTES))),  # %XX triples a byte
            size=_size(record, "s3.object.size", required=True),
            etag=_text(record, "s3.object.eTag"),
            sequencer=_sequencer(record, "s3.object.sequencer"),
            version_id=_version(record, "s3.object.versionId"),
            event_name=name,
            event_time=_text(record, "eventTime"),
            region=_text(record, "awsRegion") or "us-east-1",
        )
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return _unless_folder_marker(obj, index, where)


def _unless_folder_marker(obj: S3Object, index: int, where: str) -> S3Object | Skipped:
    """The console's "Create folder" writes a zero-byte object whose key ends in `/`
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-folders.html): not an upload."""
    if obj.key.endswith("/") and obj.size == 0:
        return Skipped(index, f"{where}{obj.key!r} is a folder marker (a zero-byte key ending "
                              "in '/'), not an upload", False)
    return obj


def _envelope_leaves(record: Mapping[str, Any], source: str, index: int, where: str,
                     shapes: ModuleType | None) -> Iterator[S3Object | Skipped]:
    """The S3 records inside an SQS message (or, with keyed_event_shapes.py, an SNS message, and
    an SNS notification or an EventBridge event inside either); a skip when it holds no S3 event."""
    if source == "aws:sns" and shapes is None:
        yield Skipped(index, f"{where}an SNS message: {NOT_READ}", True)
        return
    label, path = ("SQS message", "body") if source == "aws:sqs" else ("SNS message", "Sns.Message")
    where = f"{where}{label}: "
    try:
        message = json_message(record, path)
        if shapes is not None and source == "aws:sqs" and shapes.is_sns_notification(message):  # S3 -> SNS -> SQS
            where += "SNS notification: "
            message = json_message(message, "Message")
    except EventError as problem:
        yield Skipped(index, f"{where}{problem}", True)
        return
    except _Foreign as problem:  # from SQS: a failure, so that the redrive policy moves it to the DLQ
        yield Skipped(index, f"{where}{problem}", source == "aws:sqs")
        return
    if is_test_event(message):
        yield Skipped(index, f"{where}s3:TestEvent ignored", False)
    elif _is_eventbridge(message):
        yield (shapes.eventbridge_leaf(message, index, f"{where}EventBridge: ") if shapes is not None
               else Skipped(index, f"{where}an EventBridge event: {NOT_READ}", True))
    elif shapes is None and isinstance(message, Mapping) and message.get("Type") == "Notification":
        yield Skipped(index, f"{where}an SNS notification: {NOT_READ}", True)
    elif not isinstance(message, Mapping) or not isinstance(message.get("Records"), list):
        yield Skipped(index, f"{where}not an S3 event (no 'Records' list)"  # SQS: failed, to the DLQ
                      + ("" if source == "aws:sqs" else ", ignored"), source == "aws:sqs")
    elif not message["Records"]:
        yield Skipped(index, f"{where}an S3 event with no records", False)
    else:
        for n, inner in enumerate(message["Records"]):
            yield from _record_leaves(inner, index, f"{where}record {n}: ", envelopes=False)


def json_message(container: Any, path: str) -> Any:
    """The JSON text at `path`, decoded. EventError when it is not text; _Foreign when the
    text is not JSON (a plain-text message cannot be an S3 event)."""
    text = _text(container, path, required=True, limit=None)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Foreign(f"{path} is not JSON, so not an S3 event") from None


# -- reading one field -------------------------------------------------------------------
def _field(container: Any, path: str) -> Any:
    """The value at a dotted path, or None when a part is absent or null.
    EventError when something on the way is not a JSON object."""
    value, walked = container, list[str]()
    for part in path.split("."):
        if not isinstance(value, Mapping):
            raise EventError(f"{'.'.join(walked)} must be a JSON object, got {_kind(value)}")
        value = value.get(part)
        walked.append(part)
        if value is None:
            return None
    return value


def _text(container: Any, path: str, *, required: bool = False,
          limit: int | None = MAX_FIELD_BYTES) -> str:
    """A string field: "" when absent (EventError if required), EventError when not text,
    not valid Unicode, or longer than `limit` bytes of UTF-8."""
    value = _field(container, path)
    if value is None or value == "":
        if required:
            raise EventError(f"{path} is missing, null or empty")
        return ""
    if not isinstance(value, str):
        raise EventError(f"{path} must be a string, got {_kind(value)}")
    size = _utf8_bytes(value, path)
    if limit is not None and size > limit:
        raise EventError(f"{path} is {size:,} bytes long; S3 sends at most {limit:,}")
    return value


def _utf8_bytes(value: str, path: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:  # JSON allows "\ud800", UTF-8 (and S3, and DynamoDB) do not
        raise EventError(f"{path} is not valid Unicode (it holds a lone surrogate)") from None


def _key(key: str) -> str:
    """A decoded object key, checked against S3's own rules."""
    if not key:
        raise EventError("the object key is empty")
    size = _utf8_bytes(key, "the object key")
    if size > MAX_KEY_BYTES:
        raise EventError(f"the object key is {size:,} bytes; S3 keys are at most {MAX_KEY_BYTES:,}")
    return key


def _bucket(container: Any, path: str) -> str:
    name = _text(container, path, required=True, limit=255)
    if not BUCKET_NAME.fullmatch(name):
        raise EventError(f"{path} {_show(name)} is not a bucket name (letters, digits, '.', '-', '_')")
    return name


def _size(container: Any, path: str, *, required: bool) -> int:
    """A size in bytes: a whole number from 0 to MAX_OBJECT_SIZE (0 when absent and not required)."""
    value = _field(container, path)
    if value is None:
        if required:
            raise EventError(f"{path} is missing or null")
        return 0
    if isinstance(value, float) and value.is_integer():  # JSON may write 1024 as 1024.0 or 1.024e3
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise EventError(f"{path} must be a whole number of bytes, got {_describe(value)}")
    if not 0 <= value <= MAX_OBJECT_SIZE:
        raise EventError(f"{path} is {_show(value)}; an S3 object holds 0 bytes to 48.8 TiB")
    return value


def _version(container: Any, path: str) -> str | None:
    """A version id, or None: absent, null and S3's "null" (versioning off or suspended)
    all mean the object has no version."""
    value = _text(container, path)
    return None if value in ("", "null") else value


def _sequencer(container: Any, path: str) -> str:
    """S3's sequencer: hexadecimal digits (compared as a number), or "" when absent."""
    value = _text(container, path, limit=64)
    if value and not all(c in "0123456789abcdefABCDEF" for c in value):
        raise EventError(f"{path} {_show(value)} is not hexadecimal")
    return value


def _kind(value: Any) -> str:
    """A JSON type's name, for messages (never the value: it may be huge or deeply nested)."""
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
                              int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short, safe rendering of a scalar for a message: strings cut at 60 characters,
    huge numbers not written out, lists and objects only named."""
    if isinstance(value, str):
        return repr(value[:60] + "..." if len(value) > 60 else value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int) and abs(value) >= 10**30:
        return "a number of more than 30 digits"
    if isinstance(value, (int, float)):
        return repr(value)
    return _kind(value)


def _describe(value: Any) -> str:
    """`a string '1024'`, `a boolean true`, `a list`: what a wrong value was."""
    shown = _show(value)
    return shown if shown in (_kind(value), "null") or shown.startswith("a number of") else f"{_kind(value)} {shown}"



def event_epoch(text: Any) -> float:
    """An S3 eventTime (2026-01-01T00:00:00.000Z) in seconds since the epoch; 0.0 if unreadable."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0

