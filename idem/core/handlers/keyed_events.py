"""S3's events in, and what the operator sees out, for the handler to copy (keyed.py). In: S3's records, direct
or in SQS messages (the stack's two shapes), and S3's test event, read failing closed: a record is an upload, one
not ours (skipped, logged) or malformed (logged; the invocation fails after the good ones). SNS and EventBridge:
only with the optional keyed_event_shapes.py. Out: a JSON log line per upload and skip, an EMF document per call."""
from __future__ import annotations

import json
import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any, Iterator, Mapping
from urllib.parse import unquote_plus

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_settings import CHARGE_EVENTS, IdemError, optional_file
else:
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        CHARGE_EVENTS, IdemError, optional_file)

SUPPORTED_MAJOR_VERSION = "2"
#: Records read per invocation: an SQS batch may hold 10,000 messages
#: (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html); 500 uploads fill
#: much of the function's timeout. The rest are skipped as malformed: the event fails visibly.
MAX_RECORDS = 500
#: Object keys: "a maximum length of 1,024 bytes"
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_KEY_BYTES = 1024
#: "Maximum object size 48.8 TiB" (https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html).
MAX_OBJECT_SIZE = 10_000 * 5 * 1024**3
MAX_FIELD_BYTES = 1024  # S3's other short strings (eTag, sequencer, version id, time) stay far below
#: Bucket names (old us-east-1 ones: capitals, underscores, 255 characters); never a `/`.
BUCKET_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
BUCKET_RULE = (BUCKET_NAME, "a bucket name (letters, digits, '.', '-', '_')")
HEX_RULE = (re.compile(r"[0-9a-fA-F]+"), "hexadecimal")  # S3's sequencer
MAX_LOGGED_SKIPS = 20  # skipped records logged one by one; the rest counted in one more line
NOT_READ = "this handler reads S3's own events (direct, or in SQS); copy keyed_event_shapes.py to read it"


class EventError(IdemError, ValueError):
    """An event (or one record of it) that is not what an S3 notification looks like."""


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
        return f"s3://{self.bucket}/{self.key}" + (f"?versionId={self.version_id}" if self.version_id else "")


@dataclass(frozen=True)
class Skipped:
    """A record not processed, and why: `malformed` (an error) or not ours (a log line)."""

    index: int  # the position in the event's `Records` (of the envelope, when unwrapped)
    reason: str
    malformed: bool


@dataclass
class EventBatch:
    """What one invocation's event holds; `origins`: per object, its record's index in `Records`."""

    objects: list[S3Object] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    test_event: bool = False
    origins: list[int] = field(default_factory=list)

    @property
    def malformed(self) -> list[Skipped]:
        return [s for s in self.skipped if s.malformed]

    def log_lines(self, limit: int = MAX_LOGGED_SKIPS) -> list[tuple[str, str]]:
        """(level, message) for at most `limit` skipped records, malformed first; one line for the rest."""
        chosen = {id(s) for s in sorted(self.skipped, key=lambda s: not s.malformed)[:limit]}  # stable sort
        lines = [("error" if s.malformed else "info", f"record {s.index} skipped: {s.reason}")
                 for s in self.skipped if id(s) in chosen]
        rest, bad = len(self.skipped) - len(chosen), max(0, len(self.malformed) - limit)
        if rest:
            lines.append(("error" if bad else "info",
                          f"{rest} more records skipped ({bad} malformed), not logged one by one"))
        return lines


def is_test_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("Event") == "s3:TestEvent"


def read_event(event: Any, charge_events: tuple[str, ...] = CHARGE_EVENTS,
               shapes: ModuleType | None = None) -> EventBatch:
    """Uploads and skipped records (`shapes`: keyed_event_shapes or None); EventError: no S3 notification."""
    if is_test_event(event):
        return EventBatch(test_event=True)
    if not isinstance(event, Mapping):
        raise EventError(f"expected a JSON object, got {_kind(event)}")
    leaves = shapes.top_level(event) if shapes is not None else None  # EventBridge's own event
    if leaves is None:
        records = event.get("Records")
        if records is None:
            keys = ", ".join(sorted(_show(k) for k in list(event)[:20])) or "none"
            raise EventError(f"not an S3 notification: no 'Records' list (top-level keys: {keys}); pass the "
                             "event S3 delivers to Lambda, e.g. one captured from CloudWatch Logs")
        if not isinstance(records, list):
            raise EventError(f"'Records' must be a list, got {_kind(records)}")
        leaves = ((i, leaf) for i, record in enumerate(records) for leaf in record_leaves(record, i, "", shapes, True))
    batch = EventBatch()
    for count, (index, leaf) in enumerate(leaves):
        if count == MAX_RECORDS:
            batch.skipped.append(Skipped(index, (
                f"over the limit: one invocation reads at most {MAX_RECORDS} records (about what fits in the "
                "function's timeout), so this one and all after it were not read; send smaller batches "
                "(e.g. a smaller SQS BatchSize)"), malformed=True))
            break
        if isinstance(leaf, S3Object) and leaf.event_name not in charge_events:
            leaf = Skipped(index, f"{leaf.uri}: {leaf.event_name} does not create an order "
                                  f"(charged: {', '.join(charge_events)}); not charged", False)
        if isinstance(leaf, S3Object):
            batch.objects.append(leaf)
            batch.origins.append(index)
        else:
            batch.skipped.append(leaf)
    return batch


def record_leaves(record: Any, index: int, where: str, shapes: ModuleType | None,
                  envelopes: bool) -> Iterator[S3Object | Skipped]:
    """What one record holds: an upload or a skip; for an SQS (or, with `shapes`, SNS) message, its records."""
    if not isinstance(record, Mapping):
        yield Skipped(index, f"{where}a record must be a JSON object, got {_kind(record)}", True)
        return
    source = record.get("eventSource", record.get("EventSource"))  # SNS spells it EventSource
    if source == "aws:s3":
        yield s3_leaf(record, index, where)
    elif envelopes and source == "aws:sqs":
        yield from _sqs_leaves(record, index, f"{where}SQS message: ", shapes)
    elif envelopes and source == "aws:sns":
        yield from (shapes.sns_leaves(record, index, where) if shapes is not None
                    else [Skipped(index, f"{where}an SNS message: {NOT_READ}", True)])
    else:
        readable = "'aws:s3'" + (", or 'aws:sqs' / 'aws:sns' carrying S3 events" if envelopes else "")
        yield Skipped(index, f"{where}eventSource is {_show(source)}, not {readable}", True)


def _sqs_leaves(record: Mapping[str, Any], index: int, where: str,
                shapes: ModuleType | None) -> Iterator[S3Object | Skipped]:
    """The S3 records in an SQS message; a failure (to the DLQ) when it holds no S3 event."""
    try:
        message = json_message(record, "body")
    except EventError as problem:
        yield Skipped(index, f"{where}{problem}", True)
        return
    if shapes is not None:  # S3 -> SNS -> SQS, or EventBridge -> SQS
        yield from shapes.message_leaves(message, index, where, from_sqs=True)
    elif isinstance(message, Mapping) and (message.get("Type") == "Notification" or message.get("source") == "aws.s3"):
        yield Skipped(index, f"{where}an SNS notification or EventBridge event: {NOT_READ}", True)
    else:
        yield from message_leaves(message, index, where, malformed=True)


def message_leaves(message: Any, index: int, where: str, malformed: bool) -> Iterator[S3Object | Skipped]:
    """The S3 records of an envelope's message (`malformed`: whether one without them fails)."""
    if is_test_event(message):
        yield Skipped(index, f"{where}s3:TestEvent ignored", False)
    elif not isinstance(message, Mapping) or not isinstance(message.get("Records"), list):
        yield Skipped(index, f"{where}not an S3 event (no 'Records' list)" + ("" if malformed else ", ignored"),
                      malformed)
    elif not message["Records"]:
        yield Skipped(index, f"{where}an S3 event with no records", False)
    else:
        for n, inner in enumerate(message["Records"]):
            yield from record_leaves(inner, index, f"{where}record {n}: ", None, False)


def s3_leaf(record: Mapping[str, Any], index: int, where: str) -> S3Object | Skipped:
    """One S3 record: the upload it announces, or why it is skipped."""
    try:
        version = _text(record, "eventVersion", required=True)
        if version.split(".")[0] != SUPPORTED_MAJOR_VERSION:
            raise EventError(f"eventVersion {version!r} is not 2.x, the only version this code reads")
        name = _text(record, "eventName", required=True)
        if not name.startswith("ObjectCreated:"):
            return Skipped(index, f"{where}{name} is not an object creation", False)
        obj = S3Object(bucket=_text(record, "s3.bucket.name", required=True, limit=255, rule=BUCKET_RULE),
                       key=key_of(unquote_plus(_text(record, "s3.object.key", required=True,  # %XX triples a byte
                                                     limit=3 * MAX_KEY_BYTES))),
                       size=size_of(record, "s3.object.size", required=True), etag=_text(record, "s3.object.eTag"),
                       sequencer=_text(record, "s3.object.sequencer", limit=64, rule=HEX_RULE),
                       version_id=_version(record, "s3.object.versionId"),
                       event_name=name, event_time=_text(record, "eventTime"),
                       region=_text(record, "awsRegion") or "us-east-1")
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return unless_folder_marker(obj, index, where)


def unless_folder_marker(obj: S3Object, index: int, where: str) -> S3Object | Skipped:
    """A folder marker is not an upload (https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-folders.html)."""
    if obj.key.endswith("/") and obj.size == 0:
        return Skipped(index, f"{where}{obj.key!r} is a folder marker (a zero-byte key ending in '/'), not an upload",
                       False)
    return obj


def json_message(container: Any, path: str) -> Any:
    """The JSON text at `path`, decoded; EventError when it is not text, or not JSON."""
    text = _text(container, path, required=True, limit=None)  # outside: EventError is a ValueError
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise EventError(f"{path} is not JSON, so not an S3 event") from None


# -- one field, checked against S3's own rules --------------------------------------------------------
def _field(container: Any, path: str) -> Any:
    """The value at a dotted path, or None; EventError when a part on the way is no JSON object."""
    value = container
    for n, part in enumerate(path.split(".")):
        if not isinstance(value, Mapping):
            raise EventError(f"{'.'.join(path.split('.')[:n])} must be a JSON object, got {_kind(value)}")
        value = value.get(part)
        if value is None:
            return None
    return value


def _text(container: Any, path: str, *, required: bool = False, limit: int | None = MAX_FIELD_BYTES,
          rule: tuple[re.Pattern[str], str] | None = None) -> str:
    """A string field ("" when absent); EventError if required and missing, not Unicode, over `limit`, or not `rule`."""
    value = _field(container, path)
    if value is None or value == "":
        if required:
            raise EventError(f"{path} is missing, null or empty")
        return ""
    if not isinstance(value, str):
        raise EventError(f"{path} must be a string, got {_kind(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # JSON allows "\ud800"; UTF-8, S3 and DynamoDB do not
        raise EventError(f"{path} is not valid Unicode (it holds a lone surrogate)") from None
    if limit is not None and size > limit:
        raise EventError(f"{path} is {size:,} bytes long; S3 sends at most {limit:,}")
    if rule and not rule[0].fullmatch(value):
        raise EventError(f"{path} {_show(value)} is not {rule[1]}")
    return value


def key_of(key: str) -> str:
    """A decoded object key (non-empty, valid Unicode: `_text` read it), at most MAX_KEY_BYTES bytes."""
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise EventError(f"the object key is {len(key.encode('utf-8')):,} bytes; S3 keys are at most {MAX_KEY_BYTES:,}")
    return key


def size_of(container: Any, path: str, *, required: bool) -> int:
    """A size in bytes, 0 to MAX_OBJECT_SIZE (0 when absent and not required)."""
    value = _field(container, path)
    if value is None and required:
        raise EventError(f"{path} is missing or null")
    if isinstance(value, float) and value.is_integer():  # JSON may write 1024 as 1024.0 or 1.024e3
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | None):
        raise EventError(f"{path} must be a whole number of bytes, got {_kind(value)}"
                         + (f" {_show(value)}" if isinstance(value, str | float | bool) else ""))
    if value is not None and not 0 <= value <= MAX_OBJECT_SIZE:
        raise EventError(f"{path} is {_show(value)}; an S3 object holds 0 bytes to 48.8 TiB")
    return value or 0


def _version(container: Any, path: str) -> str | None:
    """A version id; None when absent, null or S3's "null" (versioning off or suspended)."""
    value = _text(container, path)
    return None if value in ("", "null") else value


def _kind(value: Any) -> str:
    """A JSON type's name, for messages (never the value: it may be huge or deeply nested)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short, safe rendering of a scalar: strings cut at 60 characters, huge numbers not written out."""
    if isinstance(value, str):
        return repr(value[:60] + "..." if len(value) > 60 else value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int) and abs(value) >= 10**30:
        return "a number of more than 30 digits"
    return repr(value) if isinstance(value, int | float) else _kind(value)


def event_epoch(text: Any) -> float:
    """An S3 eventTime (2026-01-01T00:00:00.000Z) in seconds since the epoch; 0.0 if unreadable."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


# -- what the operator sees: log lines and metrics ----------------------------------------------------
log = logging.getLogger("keyed")
# The Embedded Metric Format (EMF), one document per invocation, no PutMetricData call:
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
METRICS_NAMESPACE = "Idem"  # template.yaml alarms on its needs_attention
#: The outcomes counted, one metric each: needs_attention counts an order the first time it is parked
#: (the alarm's metric), still_needs_attention each later try; auth_failed, a refused secret key.
OUTCOMES = ("charged", "duplicate", "declined", "pending", "needs_attention", "work_in_progress", "ignored",
            "malformed", "lost_ownership", "failed", "still_needs_attention", "auth_failed")
PARKING = "raised while parking the order: counted needs_attention"  # a note on the error (PEP 678)
_OUTCOME_OF = {"NeedsAttention": "needs_attention", "WorkInProgress": "work_in_progress",
               "LostOwnership": "lost_ownership", "ProviderAuthFailed": "auth_failed"}


def metrics_document(counts: Mapping[str, int], function_name: str, now: float) -> dict[str, Any]:
    """One invocation's outcomes as an Embedded Metric Format document, printed (a logged line is wrapped)."""
    return {"_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
                "Namespace": METRICS_NAMESPACE, "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": name, "Unit": "Count"} for name in OUTCOMES]}]},
            "FunctionName": str(function_name), **{name: int(counts.get(name, 0)) for name in OUTCOMES}}


class JsonLines(logging.Handler):
    """One JSON object a line, as Lambda's JSON log format writes them, with our fields, on the current sys.stdout."""

    FIELDS = ("request_id", "idempotency_key", "account", "outcome", "object", "charge_id")

    def format(self, record: logging.LogRecord) -> str:
        # `at`: the clock of the code that logged it (on Lambda the same; the workbook's virtual one)
        line = {"timestamp": utc(getattr(record, "at", record.created)),
                "level": record.levelname, "message": record.getMessage(), "logger": record.name}
        line.update({name: str(getattr(record, name)) for name in self.FIELDS if getattr(record, name, None)})
        return json.dumps(line, ensure_ascii=False)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), flush=True)
        except Exception:  # as logging's own handlers do: a broken log line never stops the work
            self.handleError(record)


if not log.handlers:
    log.addHandler(JsonLines())
    log.setLevel(logging.INFO)
    log.propagate = False  # one line per record, whatever the root logger does


def log_line(level: int, message: str, request_id: str, upload: Any = None, outcome: str = "") -> None:
    """One log line naming `upload` (an Upload or OrderRef): never a secret, a card or a body, only names and ids."""
    log.log(level, message, extra={
        "request_id": request_id, "outcome": outcome,
        **({"idempotency_key": upload.idempotency_key, "account": upload.account, "object": upload.reference}
           if upload else {})})


def read_logged(event: Any, request_id: str, charge_events: tuple[str, ...]) -> EventBatch:
    """`read_event`, with a log line for an event it rejects (Lambda retries it) and each record it skips."""
    try:
        batch = read_event(event, charge_events, optional_file())
    except EventError as bad:
        log_line(logging.ERROR, f"event rejected: {bad}", request_id)
        raise
    if batch.test_event:
        log_line(logging.INFO, "s3:TestEvent ignored (S3 sends one to SNS and SQS destinations when "
                 "notifications are configured)", request_id)
    elif not batch.objects and not batch.skipped:
        log_line(logging.INFO, "the event holds no records: nothing to do", request_id)
    for level, line in batch.log_lines():  # bounded, however many records were skipped
        log_line(logging.ERROR if level == "error" else logging.INFO, line, request_id,
                 outcome="malformed" if level == "error" else "skipped")
    return batch


def log_outcome(request_id: str, upload: Any, done: dict[str, Any] | BaseException) -> str:
    """Log what became of one upload (its result, or its error); return the outcome counted."""
    if isinstance(done, BaseException):
        again = getattr(done, "again", False)
        parking = PARKING in getattr(done, "__notes__", ())
        outcome = ("still_needs_attention" if again else "needs_attention" if parking
                   else _OUTCOME_OF.get(type(done).__name__, "failed"))
        log_line(logging.ERROR, f"{type(done).__name__}: {reason_of(done)}", request_id, upload, outcome)
        return outcome
    outcome = {"found": "charged", "superseded": "lost_ownership"}.get(done["status"], str(done["status"]))
    log_line(logging.INFO, f"{upload.reference}: {done['status']}", request_id, upload, outcome)
    return outcome


@contextmanager
def parking() -> Iterator[None]:
    """Around the write that parks an order: its error is counted needs_attention (docs/money_contract.md, 4)."""
    try:
        yield
    except Exception as unknown:
        unknown.add_note(PARKING)
        raise


def utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def reason_of(error: BaseException) -> str:
    """What an error says, cut short (a provider's message, never its request body)."""
    text = str(getattr(error, "user_message", None) or error)
    return text if len(text) <= 300 else text[:300] + "..."
