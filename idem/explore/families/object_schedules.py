"""Which schedules the check can run honestly with the reader's `--object`, and why it leaves any out.

A schedule's upload must be one the real world could send the function. Two families need the
check to make a file or a name the reader did not give, and it cannot always:

- **a second order at the same name** (family `overwrite`) is another order: new bytes at the
  same key. The check makes one only from a JSON order (`order_id` gets `-2`,
  `objects.UserObject.body_for`). An image, an audio file, a CSV has no order id to change, and
  the check does not invent bytes of the reader's format: its "second order" would be the same
  bytes again, which is the uploader's retried PUT (the same eTag), and a function that rightly
  takes it for the same upload would read as having lost an order. Those schedules are left out;
  the family still runs the retried PUT. A second `--object` at the same KEY is the second order's
  file (`objects.paired`), and they run.
- **a second order at a name of S3's longest** (family `overwrite`): with an --object every
  upload is at the object's name, so the schedule would be another at that name, labelled with a
  name it never had. Left out.
- **another account's upload** (family `accounts`) lands under another account's folder, the first
  folder after the trigger's prefix (`accounts.other_account_key`), so the trigger's filter still
  accepts it. With `--object FILE=KEY` the account's folder is KEY's: when KEY has no folder after
  the prefix (`reports/daily.csv` under the prefix `reports/`, or `photo.jpeg`), another account's
  upload would need a name the reader never gave, which a function written for KEY may refuse.
  The family is then left out.

Each family left out is named in the report with its reason (`reasons`), never silently dropped.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..run import objects

NOT_ORDER = "overwrite (a second order at the same name)"
LONG_NAME = "overwrite (a second order at a name of 1,024 bytes)"


def account_folder(key: str, prefix: str = "") -> str:
    """The folder that stands for the account in `key`: its first folder after the trigger's
    `prefix` ("" when the key has none)."""
    rest = key[len(prefix):] if key.startswith(prefix) else key
    return rest.split("/", 1)[0] if "/" in rest else ""


def reasons(trigger: str = "s3") -> dict[str, str]:
    """The families (or parts of one) this check leaves out for the installed --object, and why."""
    from . import key_decoding
    from ..run import uploads

    obj, found = objects.CURRENT, {}
    if obj is not None and not obj.makes_second_orders and trigger != "sqs":  # SQS runs no second order anyway
        found[NOT_ORDER] = (f"{obj.path.rsplit('/', 1)[-1]} is not a JSON order (an object with order_id), so the "
                            "check cannot write a second, different file of its kind; the same bytes again are the "
                            "uploader's retried PUT, which the family runs; give a second order's file as a second "
                            f"--object at the same KEY ({obj.key}) to run it")
    if obj is not None and trigger != "sqs":
        found[LONG_NAME] = f"every upload is at the --object's name ({obj.key}), not at a name of S3's longest"
    if obj is not None and obj.exact and not account_folder(obj.key, uploads.KEY_PREFIX):
        under = f" after the trigger's prefix {uploads.KEY_PREFIX!r}" if uploads.KEY_PREFIX else ""
        found["accounts"] = (f"--object KEY {obj.key!r} has no folder{under} to stand for an account, so another "
                             "account's upload would be at a name the function was not given; give a KEY with the "
                             f"account's folder ({uploads.KEY_PREFIX}ACCOUNT/{obj.key[len(uploads.KEY_PREFIX):]}) "
                             "to run it")
    if key_decoding.EXACT_KEY:
        found[key_decoding.FAMILY] = "with --object FILE=KEY every upload is at KEY, the name the function was given"
    elif trigger == "eventbridge":
        found[key_decoding.FAMILY] = key_decoding.EVENTBRIDGE
    return found


def kept(found: Sequence[Any], trigger: str = "s3", report_class: Any = None) -> list[Any]:
    """`found` (schedule.Schedule's) without the schedules `reasons` leaves out; `report_class`
    (check_report.CheckReport) says them (`wrap_report`)."""
    left_out = reasons(trigger)
    if report_class is not None:
        wrap_report(report_class)
    return [s for s in found if not (NOT_ORDER in left_out and s.overwrite and s.second == "order")
            and not (LONG_NAME in left_out and s.long_name)
            and not ("accounts" in left_out and s.later is not None and s.later.kind == "accounts")]


def wrap_report(report_class: Any) -> None:
    """A report says which families it left out and why: a line under its first in the text, and
    `not_run` (family -> reason) in the JSON."""
    if getattr(report_class, "_not_run", False):
        return
    explain, to_json = report_class.explain, report_class.to_json

    def explain_with(self: Any) -> str:
        text = explain(self)
        left_out = reasons(self.trigger)
        if not left_out:
            return text
        first, _, rest = text.partition("\n")
        notes = [f"not run: {family}: {why}" for family, why in left_out.items()]
        return "\n".join([first, *notes, rest]) if rest else "\n".join([first, *notes])

    def to_json_with(self: Any) -> dict[str, Any]:
        answer = to_json(self)
        left_out = reasons(self.trigger)
        if left_out:
            answer["not_run"] = left_out
        return answer

    report_class.explain, report_class.to_json = explain_with, to_json_with
    report_class._not_run = True
