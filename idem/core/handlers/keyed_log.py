"""What the operator of the handler to copy (keyed.py) sees: one JSON log line per upload and per
skipped record, and one CloudWatch Embedded Metric Format document per invocation."""
from __future__ import annotations

import importlib
import json
import logging
import time
from typing import Any, Mapping, Protocol

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import EventBatch, EventError, read_event
    from keyed_settings import CHARGE_EVENTS
else:
    from .keyed_events import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        EventBatch, EventError, read_event)
    from .keyed_settings import CHARGE_EVENTS  # type: ignore[import-not-found, no-redef, unused-ignore]
try:  # optional: the event shapes the stack never sends (SNS, EventBridge); without it, refused
    if COPIED:
        import keyed_event_shapes as SHAPES  # type: ignore[import-not-found, unused-ignore]
    else:  # inside idem, where mypy of the copied folder cannot follow a relative `from . import`
        SHAPES = importlib.import_module(f"{__package__}.keyed_event_shapes")
except ModuleNotFoundError as missing:
    if missing.name not in ("keyed_event_shapes", f"{__package__}.keyed_event_shapes"):
        raise  # the file is there, and needs something missing: say so
    SHAPES = None  # type: ignore[assignment, unused-ignore]

log = logging.getLogger("keyed")


class Named(Protocol):
    """What a log line names of an upload (keyed.Upload has it)."""
    @property
    def idempotency_key(self) -> str: ...
    @property
    def account(self) -> str: ...
    @property
    def reference(self) -> str: ...


METRICS_NAMESPACE = "Idem"  # template.yaml alarms on its needs_attention
#: The outcomes counted, one metric each: needs_attention counts an order the first time it is parked
#: (the alarm's metric), still_needs_attention each later try; auth_failed, a refused secret key.
OUTCOMES = ("charged", "duplicate", "declined", "pending", "needs_attention", "work_in_progress", "ignored", "malformed",
            "lost_ownership", "failed", "still_needs_attention", "auth_failed")
_OUTCOME_OF = {"NeedsAttention": "needs_attention", "WorkInProgress": "work_in_progress",
               "LostOwnership": "lost_ownership", "ProviderAuthFailed": "auth_failed"}


def metrics_document(counts: Mapping[str, int], function_name: str, now: float) -> dict[str, Any]:
    """One invocation's outcomes as an Embedded Metric Format document (no PutMetricData call):
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
    Printed, not logged: Lambda's JSON log format would wrap a logged line and hide it."""
    return {"_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
                "Namespace": METRICS_NAMESPACE, "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": name, "Unit": "Count"} for name in OUTCOMES]}]},
            "FunctionName": str(function_name), **{name: int(counts.get(name, 0)) for name in OUTCOMES}}


class JsonLines(logging.Formatter):
    """One JSON object a line, as Lambda's JSON log format writes them, with this handler's fields
    (https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html)."""

    FIELDS = ("request_id", "idempotency_key", "account", "outcome", "object", "charge_id")

    def format(self, record: logging.LogRecord) -> str:
        # `at`: the clock of the code that logged it (on Lambda the same; the workbook's virtual one)
        line = {"timestamp": utc(getattr(record, "at", record.created)),
                "level": record.levelname, "message": record.getMessage(), "logger": record.name}
        line.update({name: str(getattr(record, name)) for name in self.FIELDS if getattr(record, name, None)})
        return json.dumps(line, ensure_ascii=False)


class _Stdout(logging.Handler):
    """Writes to whatever sys.stdout is now (Lambda's, or a test's capture)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), flush=True)
        except Exception:  # as logging's own handlers do: a broken log line never stops the work
            self.handleError(record)


if not log.handlers:
    _handler = _Stdout()
    _handler.setFormatter(JsonLines())
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # one line per record, whatever the root logger does


def log_line(level: int, message: str, request_id: str, upload: Named | None = None, outcome: str = "") -> None:
    """One log line. Never a secret, a card detail or an object's body: only names and ids."""
    log.log(level, message, extra={
        "request_id": request_id, "outcome": outcome,
        **({"idempotency_key": upload.idempotency_key, "account": upload.account, "object": upload.reference}
           if upload else {})})


def read_logged(event: Any, request_id: str, charge_events: tuple[str, ...] | None = None) -> EventBatch:
    """`read_event`, with a log line for an event it rejects and for every record it skips."""
    try:
        # EventError: not an S3 notification at all; Lambda retries it
        batch = read_event(event, charge_events or CHARGE_EVENTS, SHAPES)
    except EventError as bad:
        log_line(logging.ERROR, f"event rejected: {bad}", request_id)
        raise
    if batch.test_event:
        log_line(logging.INFO, "s3:TestEvent ignored (S3 sends one to SNS and SQS destinations when notifications are configured)", request_id)
    elif not batch.objects and not batch.skipped:
        log_line(logging.INFO, "the event holds no records: nothing to do", request_id)
    for level, line in batch.log_lines():  # bounded, however many records were skipped
        malformed = level == "error"
        log_line(logging.ERROR if malformed else logging.INFO, line, request_id,
             outcome="malformed" if malformed else "skipped")
    return batch


def log_outcome(request_id: str, upload: Named, done: dict[str, Any] | BaseException) -> str:
    """Log what became of one upload (its result, or its error); return the outcome counted."""
    if isinstance(done, BaseException):
        outcome = "still_needs_attention" if getattr(done, "again", False) else _OUTCOME_OF.get(
            type(done).__name__, "failed")
        log_line(logging.ERROR, f"{type(done).__name__}: {reason_of(done)}", request_id, upload, outcome)
        return outcome
    outcome = {"found": "charged", "superseded": "lost_ownership"}.get(done["status"], str(done["status"]))
    log_line(logging.INFO, f"{upload.reference}: {done['status']}", request_id, upload, outcome)
    return outcome


def utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def reason_of(error: BaseException) -> str:
    """What an error says, cut short (a provider's message, never its request body)."""
    text = str(getattr(error, "user_message", None) or error)
    return text if len(text) <= 300 else text[:300] + "..."
