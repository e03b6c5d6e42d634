"""S3 event notifications: build them in the exact AWS shape, and read them back.

S3 delivers `{"Records": [...]}` to the function. The object key arrives URL-encoded
(`my file.csv` arrives as `my+file.csv`); `read_event` decodes it. S3 also sends an
`s3:TestEvent` whenever a notification configuration changes, and EventBridge delivers
its own shape of the same news: both are recognised here rather than crashed on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import quote_plus, unquote_plus

SUPPORTED_MAJOR_VERSION = "2"


class EventError(ValueError):
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
        version = f"?versionId={self.version_id}" if self.version_id else ""
        return f"s3://{self.bucket}/{self.key}{version}"


@dataclass(frozen=True)
class Skipped:
    """A record the function did not process, and why."""

    index: int
    reason: str
    malformed: bool  # True: a broken record (an error); False: not ours to handle (a log line)


@dataclass
class EventBatch:
    """What one invocation's event holds."""

    objects: list[S3Object] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    test_event: bool = False

    @property
    def malformed(self) -> list[Skipped]:
        return [s for s in self.skipped if s.malformed]


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


def is_test_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("Event") == "s3:TestEvent"


def read_event(event: Any) -> EventBatch:
    """Split an invocation's event into objects to process and records to skip.

    Raises EventError only when the event as a whole is not an S3 notification; a bad
    record inside a good event is reported in `skipped` so the good ones are not lost.
    """
    if is_test_event(event):
        return EventBatch(test_event=True)
    if not isinstance(event, Mapping):
        raise EventError(f"expected a JSON object, got {type(event).__name__}")
    if event.get("source") == "aws.s3" and "detail" in event:
        return _read_eventbridge(event)
    records = event.get("Records")
    if records is None:
        keys = ", ".join(sorted(map(str, event))) or "none"
        raise EventError(
            f"not an S3 notification: no 'Records' list (top-level keys: {keys}); "
            "pass the event S3 delivers to Lambda, e.g. one captured from CloudWatch Logs"
        )
    if not isinstance(records, list):
        raise EventError(f"'Records' must be a list, got {type(records).__name__}")
    batch = EventBatch()
    for index, record in enumerate(records):
        try:
            obj = read_record(record)
        except EventError as problem:
            batch.skipped.append(Skipped(index, str(problem), malformed=True))
            continue
        if obj is None:
            name = record.get("eventName", "?")
            batch.skipped.append(Skipped(index, f"{name} is not an object creation", malformed=False))
        else:
            batch.objects.append(obj)
    return batch


def read_record(record: Any) -> S3Object | None:
    """Decode one record. None for a well-formed record that is not `ObjectCreated:*`."""
    if not isinstance(record, Mapping):
        raise EventError(f"a record must be a JSON object, got {type(record).__name__}")
    source = record.get("eventSource")
    if source != "aws:s3":
        raise EventError(f"eventSource is {source!r}, not 'aws:s3'")
    version = str(record.get("eventVersion", ""))
    if version.split(".")[0] != SUPPORTED_MAJOR_VERSION:
        raise EventError(f"eventVersion {version!r} is not 2.x, the only version this code reads")
    if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
        return None
    try:
        s3 = record["s3"]
        bucket = s3["bucket"]["name"]
        obj = s3["object"]
        raw_key = obj["key"]
    except (KeyError, TypeError) as missing:
        raise EventError(f"record has no s3.bucket.name / s3.object.key (missing {missing})") from None
    if not isinstance(raw_key, str) or not raw_key:
        raise EventError("s3.object.key is empty")
    return S3Object(
        bucket=bucket,
        key=unquote_plus(raw_key),
        size=int(obj.get("size", 0)),
        etag=str(obj.get("eTag", "")),
        sequencer=str(obj.get("sequencer", "")),
        # "null" is S3's name for "no version" (versioning off or suspended): the same as absent
        version_id=None if obj.get("versionId") in (None, "", "null") else str(obj["versionId"]),
        event_name=record["eventName"],
        event_time=str(record.get("eventTime", "")),
        region=str(record.get("awsRegion", "us-east-1")),
    )


def _read_eventbridge(event: Mapping[str, Any]) -> EventBatch:
    """EventBridge's `Object Created` event: the same facts, another shape, key not encoded."""
    if event.get("detail-type") != "Object Created":
        return EventBatch(skipped=[Skipped(0, f"EventBridge {event.get('detail-type')!r} ignored", False)])
    try:
        detail = event["detail"]
        obj = detail["object"]
        found = S3Object(
            bucket=detail["bucket"]["name"],
            key=obj["key"],
            size=int(obj.get("size", 0)),
            etag=str(obj.get("etag", "")),
            sequencer=str(obj.get("sequencer", "")),
            version_id=obj.get("version-id"),
            event_name="ObjectCreated:" + str(detail.get("reason", "PutObject")),
            event_time=str(event.get("time", "")),
            region=str(event.get("region", "us-east-1")),
        )
    except (KeyError, TypeError) as missing:
        return EventBatch(skipped=[Skipped(0, f"EventBridge event without {missing}", True)])
    return EventBatch(objects=[found])


def load_event(text: str) -> Any:
    """Parse an event captured as JSON text, with an error that says what to fix."""
    if not text.strip():
        raise EventError("the event is empty: expected the JSON S3 sends, {\"Records\": [...]}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as bad:
        raise EventError(f"not valid JSON (line {bad.lineno}, column {bad.colno}: {bad.msg})") from None


def newer_sequencer(a: str, b: str) -> bool:
    """True when sequencer `a` is later than `b` (same object key only).

    Sequencers differ in length; S3 says to right-pad the shorter one with zeros and
    compare them as hexadecimal numbers.
    """
    width = max(len(a), len(b))
    return int(a.ljust(width, "0"), 16) > int(b.ljust(width, "0"), 16)
