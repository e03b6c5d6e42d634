"""The scheduled reconciliation: the ledger's done lines in a window against the provider's charges.

template.yaml's ReconcileFunction runs `lambda_handler` every WINDOW_MINUTES (EventBridge
Scheduler). Each run takes one closed window of time and asks two questions:

- unbooked: a charge the provider made in the window that no ledger line holds
  (money moved, the books are silent: the customer may be charged again, or never told);
- uncharged: a ledger line booked in the window whose charge the provider does not have
  (the books say paid, no money moved).

It also compares the amount of each charge that both sides hold. The answer is a report
object in REPORT_BUCKET (one per window, named by the window) and EMF metrics in namespace
`Idem` with dimension FunctionName; the stack alarms when `Differences` is above zero.

The window closes LAG seconds before now, LAG being the longest an upload's event can still
be retried (MAX_EVENT_AGE_SECONDS) plus the longest invocation (900 s): a charge made just
before the window ends may be booked by a retry up to LAG later, so lines are read up to LAG
past the window's end, and charges from LAG before its start; only items whose own time is
inside the window are reported. Records a handler left in needs_attention are not here: the
handler's NeedsAttention metric alarms on those (chapter 06).

The provider is the workbook's stand-in (PROVIDER_TABLE, the demo) or Stripe (STRIPE_SECRET_
PARAMETER, the SSM parameter holding the secret key): Stripe's charge list is read with the
standard library over HTTPS, so the function ships stdlib + boto3 only, like the rest of the core.
"""
from __future__ import annotations

import base64
import json
import os
import time
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping

import boto3

from .dynamo import from_item, values

#: The metrics' namespace and dimension; template.yaml's alarms read exactly these.
NAMESPACE = "Idem"
DIMENSION = "FunctionName"
#: The ledger's sparse index of done lines (idem.core.handlers.keyed.BOOKS_INDEX).
BOOKS_INDEX = "by_account"
#: Lambda's longest invocation: a retry may book this long after it started.
MAX_INVOCATION_SECONDS = 900
#: Stripe's PaymentIntents list: the handler's adapter books a PaymentIntent's id (`pi_...`), so the
#: job lists PaymentIntents, not Charges (whose ids are `ch_...` and would never match a line).
#: `created[gte]`/`created[lt]` filter by creation time, `limit` is at most 100, `starting_after`
#: pages on: https://docs.stripe.com/api/payment_intents/list
STRIPE_PAYMENT_INTENTS = "https://api.stripe.com/v1/payment_intents"


@dataclass(frozen=True)
class Entry:
    """One side's view of one charge: its id, whose, how much, and when (epoch seconds)."""

    charge_id: str
    account: str
    cents: int
    at: float


@dataclass
class WindowReport:
    start: float
    end: float
    ledger_lines: int = 0
    provider_charges: int = 0
    unbooked: list[Entry] = field(default_factory=list)  # charged, not on the books
    uncharged: list[Entry] = field(default_factory=list)  # on the books, not charged
    amount_mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def differences(self) -> int:
        return len(self.unbooked) + len(self.uncharged) + len(self.amount_mismatches)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "differences": self.differences,
                "window": f"{iso(self.start)}/{iso(self.end)}"}

    def key(self) -> str:
        """The report object's key: one per window, so a rerun overwrites its own report."""
        return f"reconcile/{iso(self.start)}--{iso(self.end)}.json"


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def window(now: float, minutes: int, lag_seconds: float) -> tuple[float, float]:
    """The last whole window that closed at least `lag_seconds` ago, aligned to its length."""
    length = minutes * 60
    end = (int(now - lag_seconds) // length) * length
    return float(end - length), float(end)


def ledger_lines(dynamodb: Any, table: str, start: float, end: float) -> list[Entry]:
    """Done lines booked in [start, end): a Scan of the sparse index, which holds only them."""
    found = []
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table, IndexName=BOOKS_INDEX,
        FilterExpression="#b >= :start AND #b < :end", ExpressionAttributeNames={"#b": "booked_at"},
        ExpressionAttributeValues=values(start=start, end=end))
    for page in pages:
        for item in map(from_item, page["Items"]):
            assert item is not None
            found.append(Entry(str(item["charge_id"]), str(item["account"]), int(item["cents"]),
                               float(item["booked_at"])))
    return found


def standin_charges(dynamodb: Any, table: str, start: float, end: float) -> list[Entry]:
    """The workbook's stand-in provider: charges created in [start, end)."""
    found = []
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table, ConsistentRead=True,
        FilterExpression="#k = :charge AND #c >= :start AND #c < :end",
        ExpressionAttributeNames={"#k": "kind", "#c": "created_at"},
        ExpressionAttributeValues=values(charge="charge", start=start, end=end))
    for page in pages:
        for item in map(from_item, page["Items"]):
            assert item is not None
            found.append(Entry(str(item["pk"]).removeprefix("charge#"), str(item["customer"]),
                               int(item["amount"]), float(item["created_at"])))
    return found


Fetch = Callable[[urllib.request.Request], Mapping[str, Any]]


def _fetch_json(request: urllib.request.Request) -> Mapping[str, Any]:
    with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310 (https, fixed host)
        page: Mapping[str, Any] = json.load(answer)
        return page


def stripe_charges(secret_key: str, start: float, end: float, fetch: Fetch = _fetch_json) -> list[Entry]:
    """Stripe's succeeded PaymentIntents created in [start, end), every page of them, by the id
    the handler books. The account is the intent's metadata `account` (what the handler's Stripe
    adapter writes), else its customer; the amount is what it received."""
    found: list[Entry] = []
    token = base64.b64encode(f"{secret_key}:".encode()).decode()  # Stripe: basic auth, key as user
    after = ""
    while True:
        query = {"created[gte]": str(int(start)), "created[lt]": str(int(end)), "limit": "100"}
        if after:
            query["starting_after"] = after
        request = urllib.request.Request(f"{STRIPE_PAYMENT_INTENTS}?{urllib.parse.urlencode(query)}",
                                         headers={"Authorization": f"Basic {token}"})
        page = fetch(request)
        for charge in page.get("data", []):
            if charge.get("status") == "succeeded":
                account = (charge.get("metadata") or {}).get("account") or charge.get("customer") or ""
                cents = charge.get("amount_received") or charge["amount"]
                found.append(Entry(charge["id"], str(account), int(cents),
                                   float(charge["created"])))
        if not page.get("has_more") or not page.get("data"):
            return found
        after = page["data"][-1]["id"]


def compare(lines: Iterable[Entry], charges: Iterable[Entry], start: float, end: float) -> WindowReport:
    """Lines and charges read over the widened ranges; differences only inside [start, end)."""
    lines, charges = list(lines), list(charges)
    booked = {line.charge_id: line for line in lines}
    charged = {charge.charge_id: charge for charge in charges}
    inside = [line for line in lines if start <= line.at < end]
    made = [charge for charge in charges if start <= charge.at < end]
    report = WindowReport(start, end, ledger_lines=len(inside), provider_charges=len(made))
    report.unbooked = sorted((c for c in made if c.charge_id not in booked), key=lambda e: e.charge_id)
    report.uncharged = sorted((line for line in inside if line.charge_id not in charged),
                              key=lambda e: e.charge_id)
    for line in sorted(inside, key=lambda e: e.charge_id):
        charge = charged.get(line.charge_id)
        if charge is not None and charge.cents != line.cents:
            report.amount_mismatches.append({"charge_id": line.charge_id, "ledger_cents": line.cents,
                                             "provider_cents": charge.cents})
    return report


def emf(report: WindowReport, function_name: str, now: float) -> str:
    """The report's numbers as one CloudWatch embedded-metric-format line (printed, not logged:
    with LogFormat JSON, print stays a raw line, which CloudWatch extracts).
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html"""
    numbers = {"Differences": report.differences, "UnbookedCharges": len(report.unbooked),
               "UnchargedLines": len(report.uncharged), "AmountMismatches": len(report.amount_mismatches),
               "LedgerLines": report.ledger_lines, "ProviderCharges": report.provider_charges}
    return json.dumps({
        "_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
            "Namespace": NAMESPACE, "Dimensions": [[DIMENSION]],
            "Metrics": [{"Name": name, "Unit": "Count"} for name in numbers]}]},
        DIMENSION: function_name, **numbers}, separators=(",", ":"))


def run(env: Mapping[str, str], session: Any, now: float, say: Callable[[str], None] = print,
        fetch: Fetch = _fetch_json) -> WindowReport:
    """One reconciliation: read both sides, compare, write the report, print the metrics."""
    missing = [n for n in ("LEDGER_TABLE", "REPORT_BUCKET") if not env.get(n)]
    if not (env.get("PROVIDER_TABLE") or env.get("STRIPE_SECRET_PARAMETER")):
        missing.append("PROVIDER_TABLE or STRIPE_SECRET_PARAMETER")
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not set: template.yaml sets them on ReconcileFunction")
    lag = int(env.get("MAX_EVENT_AGE_SECONDS") or 21600) + MAX_INVOCATION_SECONDS
    start, end = window(now, int(env.get("WINDOW_MINUTES") or 60), lag)
    dynamodb = session.client("dynamodb")
    lines = ledger_lines(dynamodb, env["LEDGER_TABLE"], start, end + lag)
    if env.get("PROVIDER_TABLE"):
        charges = standin_charges(dynamodb, env["PROVIDER_TABLE"], start - lag, end)
    else:
        secret = session.client("ssm").get_parameter(Name=env["STRIPE_SECRET_PARAMETER"],
                                                     WithDecryption=True)["Parameter"]["Value"]
        charges = stripe_charges(secret, start - lag, end, fetch)
    report = compare(lines, charges, start, end)
    session.client("s3").put_object(Bucket=env["REPORT_BUCKET"], Key=report.key(),
                                    Body=json.dumps(report.to_dict(), indent=1).encode(),
                                    ContentType="application/json")
    say(emf(report, env.get("AWS_LAMBDA_FUNCTION_NAME", "reconcile"), now))
    return report


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """EventBridge Scheduler's target (template.yaml: ReconcileFunction)."""
    report = run(os.environ, boto3.session.Session(), time.time())
    return {"window": report.to_dict()["window"], "differences": report.differences,
            "report": report.key()}
