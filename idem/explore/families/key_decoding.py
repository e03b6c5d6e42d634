"""Names that need URL-decoding: their own family of schedules, and their own finding.

S3's event carries the object's key URL-encoded: a space is `+`, a `+` is `%2B`, `ü` is `%C3%BC`
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html: "The
s3 key provides information about the bucket and object involved in the event. The object key name
value is URL encoded"). The clean run and every other family upload plain names (`order-1.json`,
`triggers.object_name`), which read the same encoded or not, so a function that passes the key to
GetObject as it came runs its clean run like any other. The family `names` then uploads the clean
run's order, with no fault, one delivery, at each name of NAMES: a name with a space, with a `+`,
with a non-ASCII letter. A function whose run at such a name ends other than exactly once, when its
clean run held, breaks with the finding "the key is not URL-decoded", naming the schedule, the
name, what S3's event carried and the error (`judged`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable
from urllib.parse import quote_plus

PAGE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html"
#: The family's names: each reads otherwise once URL-encoded, as S3's event carries it.
NAMES = ("order 1.json", "order+1.json", "order-1-\u00fc.json")
FAMILY = "names"
#: On while the check runs an --object at an exact KEY (`objects.install`): no family names.
EXACT_KEY = False
#: Why the family is not run under EventBridge. S3's page for the EventBridge event
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html, "Event message detail
#: field") describes `detail.object.key` without saying it is URL-encoded, and its examples hold no
#: character that would tell; the page for the Lambda/SQS/SNS event (PAGE) says that one is. AWS's
#: own Powertools for Python nonetheless decodes it (`S3EventBridgeNotificationObject.key` returns
#: `unquote_plus(self["key"])`, aws-powertools/powertools-lambda-python,
#: aws_lambda_powertools/utilities/data_classes/s3_event.py). Undocumented either way, so the check
#: sends the key as stored (`idem.sim.triggers.eventbridge_event`) and judges neither decoding nor
#: its absence: a function that does not decode an EventBridge key is not told apart here.
EVENTBRIDGE = ("EventBridge's Object Created event: S3's page for it "
               "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html) does not say "
               "detail.object.key is URL-encoded, so the check sends the key as stored and does not judge decoding")
DESCRIPTION = ("the clean run's upload at names S3's event carries URL-encoded (a space, a '+', a non-ASCII "
               "letter), no fault, one delivery, the fewest retries")


def encoded(name: str) -> str:
    """`name` as S3's event carries it (folders keep their `/`)."""
    return quote_plus(name, safe="/")


def schedules(schedule: Callable[..., Any], retries: Iterable[int], trigger: str = "s3") -> list[Any]:
    """The family: one schedule per name of NAMES (`schedule` is schedule.Schedule). None with an
    --object at an exact KEY: every schedule then uploads at the name the reader gave
    (`idem.explore.run.exact_keys`), and a function may be written for that name alone. None under
    EventBridge (EVENTBRIDGE says why)."""
    if EXACT_KEY or trigger == "eventbridge":
        return []
    least = min(retries)
    return [schedule(None, "single", None, least, name=name) for name in NAMES]


def plain_name(key: str, obj: Any = None) -> tuple[str, str] | None:
    """For an upload of the family: (its file name, the file name the clean run's upload has at
    the same place: `obj`'s, the --object's without a KEY, else the check's own), so what the
    function names after the file (`processed/order 1.json`) is compared with what the clean run
    named after its own (`idem.explore.judge.state.Names`); None for any other upload."""
    name = key.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if (stem if dot else name) not in {n.rsplit(".", 1)[0] for n in NAMES}:
        return None
    plain = obj.key.rsplit("/", 1)[-1] if obj is not None and not obj.exact else "order-1" + (f".{extension}" if dot else "")
    return name, plain


def label(name: str) -> str:
    """What a schedule of the family adds to its label."""
    return f"the upload named {name!r} (S3's event: {encoded(name)!r})"


def renamed(key: str, name: str) -> str:
    """`key` with its file name replaced by `name`, keeping its folder and its extension (an
    --object's KEY, a filter's suffix)."""
    folder, _, file = key.rpartition("/")
    stem, dot, _ = name.rpartition(".")
    extension = file.rsplit(".", 1)[1] if "." in file else ""
    new = f"{stem}.{extension}" if dot and extension else (stem if dot else name)
    return f"{folder}/{new}" if folder else new


def judged(report: Any) -> Any:
    """`report`, carrying the finding `not_decoded` when a schedule of the family ended other than
    exactly once (its first such schedule: the finding names it)."""
    results = getattr(report, "results", [])
    if any(r.clean for r in results):
        return report
    plain = {r.schedule.retries: r for r in results if replace(r.schedule, timing=None) == type(r.schedule)(
        None, "single", None, r.schedule.retries)}  # the same run at a plain name, its delays drawn or not

    def failed(result: Any) -> bool:
        return any(getattr(a, "failed", False) for a in result.attempts)

    def differs(result: Any) -> bool:
        twin = plain.get(result.schedule.retries)
        if twin is None:
            return result.verdict != "exactly_once" or failed(result)
        return result.verdict != twin.verdict or failed(result) > failed(twin)

    failing = [r for r in results if getattr(r.schedule, "name", "") and differs(r)]
    if not failing:
        return report
    first = failing[0]
    errors = [str(a.error) for a in first.attempts if getattr(a, "failed", False) and getattr(a, "error", "")]
    how = f"failed ({errors[0][:200]})" if errors else f"ran to {first.verdict} ({'; '.join(first.findings)[:200]})"
    finding = (f"the key is not URL-decoded: S3's event carries the object's key URL-encoded ({PAGE}); in the "
               f"schedule ({first.schedule.label()}) the function {how}, where the clean run's plain name "
               f"held; decode it with urllib.parse.unquote_plus(key)")
    first.findings = [finding] + [f for f in first.findings if f != finding]
    wrap_report(type(report))
    report.not_decoded = finding
    return report


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
