"""A function that does not URL-decode the event's key: its own finding, not a failed clean run.

S3's event carries the object's key URL-encoded: a space is `+`, `ü` is `%C3%BC`
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html: "The
s3 key provides information about the bucket and object involved in the event. The object key name
value is URL encoded"). The check names its uploads `order 1 ü.json`, so a function that passes the
key to GetObject as it came fails on its clean run, which would read as a missing resource or a
failed clean run. When the clean run fails, the check runs the whole check again with names that
need no decoding (`order-1.json`): if that clean run passes, the report is that check's, and it
breaks with the finding "the key is not URL-decoded" (the clean run under the other name, with its
error), whatever its schedules found besides.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from .objects import KEY_BYTES

PAGE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html"
#: The check's names for the uploads of a batch, with nothing to decode.
PLAIN = ("order-1.json", "order-2.json")


@contextlib.contextmanager
def plain_names() -> Iterator[None]:
    """While it lasts, the check's uploads have names that need no URL-decoding."""
    from . import triggers

    real = triggers.object_name

    def plain(number: int, name: str = triggers.SQS_BATCH[0], longest: bool = False) -> str:
        name = PLAIN[triggers.SQS_BATCH.index(name)] if name in triggers.SQS_BATCH else name
        folder = f"check{number:05d}/"
        if not longest:
            return folder + name
        stem, suffix = name.rsplit(".", 1)
        room = KEY_BYTES - len(folder) - len(suffix) - 1
        return f"{folder}{(stem + '-') * (room // (len(stem) + 1))}{'x' * (room % (len(stem) + 1))}.{suffix}"

    triggers.object_name = plain  # type: ignore[assignment]
    try:
        yield
    finally:
        triggers.object_name = real  # type: ignore[assignment]


def clean_run_failed(report: Any) -> str:
    """The clean run's error, when the report is a clean run that failed; else ""."""
    results = getattr(report, "results", [])
    if len(results) != 1 or not getattr(results[0], "clean", False):
        return ""
    failed = [a for a in results[0].attempts if getattr(a, "failed", False)]
    return str(getattr(failed[0], "error", "") or "failed") if failed else ""


def retried_with_plain_names(report: Any, check_again: Callable[[], Any]) -> Any:
    """`report`, or, when its clean run failed and a check with plain names passes its own clean
    run, that check's report carrying the finding (`not_decoded`)."""
    error = clean_run_failed(report)
    if not error:
        return report
    from . import triggers

    with plain_names():
        again = check_again()
    if clean_run_failed(again):
        return report
    wrap_report(type(again))
    again.not_decoded = (
        f"the key is not URL-decoded: S3's event carries the object's key URL-encoded ({PAGE}); the clean "
        f"run with the upload named {triggers.SQS_BATCH[0]!r} failed ({error[:200]}), the same upload named "
        f"{PLAIN[0]!r}, which needs no decoding, did not; decode it with urllib.parse.unquote_plus(key) "
        f"(the schedules below ran with plain names)")
    return again


def wrap_report(report_class: Any) -> None:
    """A report carrying `not_decoded` breaks, and says so first."""
    if getattr(report_class, "_key_decoding", False):
        return
    holds, explain, to_json = report_class.holds, report_class.explain, report_class.to_json

    def explain_with(self: Any) -> str:
        text = explain(self)
        finding = getattr(self, "not_decoded", "")
        return f"breaks: {finding}\n\n{text}" if finding else text

    def to_json_with(self: Any) -> dict[str, Any]:
        answer = to_json(self)
        finding = getattr(self, "not_decoded", "")
        if finding:
            answer.update(exit_code=1, holds=False, key_not_decoded=finding)
        return answer

    report_class.holds = property(lambda self: holds.fget(self) and not getattr(self, "not_decoded", ""))
    report_class.explain, report_class.to_json = explain_with, to_json_with
    report_class._key_decoding = True
