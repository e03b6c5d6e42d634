"""The reconciliation's vocabulary: what each side says (`Entry`, `UploadSeen`), what does not
add up (`Finding`, one of `KINDS`, each with the command that settles it), a window's report and
its metrics (EMF). Used by job.py, its sides (lines, uploads, charges) and the comparison
(compare)."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

#: The metrics' namespace and dimension; template.yaml's alarms read exactly these.
NAMESPACE = "Idem"
DIMENSION = "FunctionName"


# -- what each side says ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One side's view of one charge: its id, whose, how much, and when (epoch seconds); `key`
    is the order's idempotency key (the ledger line's pk, the charge's metadata), and `order`
    what the charge was for (the metadata's account, or bucket, and order_id, else the upload it
    names), when known: two charges with one `order` (or one key) are two charges for one order."""

    charge_id: str
    account: str
    cents: int
    at: float
    key: str = ""
    order: str = ""
    customer: str = ""  # the charge's customer (Stripe: cus_...); a line's, as booked
    currency: str = ""  # lower case, as Stripe answers it; "" when the side does not say
    status: str = ""  # a charge's status (Stripe's PaymentIntent status); "" for a line


@dataclass(frozen=True)
class UploadSeen:
    """One version S3 holds: where, and when it was written."""

    bucket: str
    key: str
    version_id: str | None
    etag: str
    at: float

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}" + (f"?versionId={self.version_id}" if self.version_id else "")


@dataclass(frozen=True)
class Finding:
    """One thing that does not add up, and the command that settles it."""

    kind: str  # one of KINDS
    what: str  # the upload, the charge or the key it is about
    key: str  # the order's idempotency key ("" when unknown)
    detail: str
    command: str


#: What each kind means, for the report's text.
KINDS = {
    "missing_line": "an upload with no ledger line",
    "uncharged": "a ledger line with no charge",
    "unbooked": "a charge with no ledger line",
    "double": "two charges for one order",
    "needs_attention": "an order a handler left for a person",
    "pending": "a charge still not settled when its window is judged",
    "amount": "a line and its charge disagree on the amount or the currency",
    "account": "a line's account does not map to its charge's customer",
    "refund": "a refund at Stripe the ledger does not book (made outside idem refund)",
}


@dataclass
class WindowReport:
    start: float
    end: float
    uploads: int = 0
    ledger_lines: int = 0
    provider_charges: int = 0
    unbooked: list[Entry] = field(default_factory=list)  # charged, not on the books
    uncharged: list[Entry] = field(default_factory=list)  # on the books, not charged
    amount_mismatches: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # every difference, with its command

    @property
    def differences(self) -> int:
        return len(self.findings)

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "differences": self.differences,
                "window": f"{iso(self.start)}/{iso(self.end)}"}

    def key(self) -> str:
        """The report object's key: one per window, so a rerun overwrites its own report."""
        return f"reconcile/{iso(self.start)}--{iso(self.end)}.json"

    def render(self) -> str:
        """One line a finding, each with its command."""
        lines = [f"window {iso(self.start)}/{iso(self.end)}: {self.uploads} uploads, "
                 f"{self.ledger_lines} ledger lines, {self.provider_charges} charges"]
        if not self.findings:
            return "\n".join(lines + ["clean: every upload booked once, every line charged, every charge booked"])
        for f in self.findings:
            lines.append(f"{f.kind.upper():<16} {f.what}: {f.detail}\n{'':<17}settle: {f.command}")
        return "\n".join(lines)


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def day_of(seconds: float) -> str:
    """The index's bucket for a moment: its UTC day, YYYY-MM-DD (what a commit writes as booked_day)."""
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def window(now: float, minutes: int, lag_seconds: float) -> tuple[float, float]:
    """The last whole window that closed at least `lag_seconds` ago, aligned to its length."""
    length = minutes * 60
    end = (int(now - lag_seconds) // length) * length
    return float(end - length), float(end)



def emf(report: WindowReport, function_name: str, now: float) -> str:
    """The report's numbers as one CloudWatch embedded-metric-format line (printed, not logged:
    with LogFormat JSON, print stays a raw line, which CloudWatch extracts).
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html"""
    numbers = {"Differences": report.differences, "UnbookedCharges": len(report.unbooked),
               "UnchargedLines": len(report.uncharged), "AmountMismatches": len(report.amount_mismatches),
               "UploadsWithoutLine": report.count("missing_line"), "DoubleCharges": report.count("double"),
               "PendingUnsettled": report.count("pending"), "AccountMismatches": report.count("account"),
               "UnbookedRefunds": report.count("refund"),
               "LedgerLines": report.ledger_lines, "ProviderCharges": report.provider_charges,
               "Uploads": report.uploads}
    return json.dumps({
        "_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
            "Namespace": NAMESPACE, "Dimensions": [[DIMENSION]],
            "Metrics": [{"Name": name, "Unit": "Count"} for name in numbers]}]},
        DIMENSION: function_name, **numbers}, separators=(",", ":"))

