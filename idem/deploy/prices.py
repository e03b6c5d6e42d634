"""What the production profile costs: per month at rest, and per million uploads.

US East (N. Virginia) list prices, before any free tier, each with where it was read. AWS's
pricing pages draw their tables with a script, so several figures come from third-party pages
that quote them ([3rd] below): check them with the AWS Pricing Calculator before you budget.
The usage behind each line (invocation time, log bytes, writes per upload) is an assumption
named beside it, so a reader can put in their own.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    usd: float
    per: str
    source: str


PRICES = {
    # https://docs.aws.amazon.com/whitepapers/latest/how-aws-pricing-works/lambda.html (AWS):
    # "$0.20 per 1 million requests", "$0.00001667 for every GB-second" (that is x86). Both of the
    # stack's functions run on arm64 (template.yaml), whose rate is $0.0000133334 per GB-second:
    # https://aws.amazon.com/lambda/pricing/ draws it with a script; [3rd] artillery's
    # lib/platform/aws-lambda/prices.js (base arm64 1333340e-11) and cloudchipr.com quote it.
    "lambda_requests": Price(0.20, "million requests", "AWS: how-aws-pricing-works/lambda.html"),
    "lambda_gb_second": Price(0.0000133334, "GB-second, arm64", "[3rd] artillery prices.js; aws.amazon.com/lambda/pricing"),
    # [3rd] https://airbyte.com/data-engineering-resources/dynamodb-pricing (after the Nov 2024 cut)
    "dynamodb_wru": Price(0.625, "million write units", "[3rd] airbyte.com dynamodb-pricing"),
    # [3rd] the same page: on-demand reads $0.125 per million read request units (as capacity.US_EAST_1)
    "dynamodb_rru": Price(0.125, "million read units", "[3rd] airbyte.com dynamodb-pricing"),
    # [3rd] https://finops.com.py/services/dynamodb/backups
    "dynamodb_pitr": Price(0.20, "GB-month", "[3rd] finops.com.py dynamodb backups"),
    # [3rd] https://gist.github.com/aarone/93267 lists S3's request classes; the 2026 rate for
    # "PUT, COPY, POST, LIST requests" is $0.005 per 1,000 and GET $0.0004 per 1,000 (widely
    # quoted; the AWS page https://aws.amazon.com/s3/pricing/ renders them with a script).
    "s3_put": Price(0.005, "thousand PUT requests", "[3rd] widely quoted; aws.amazon.com/s3/pricing"),
    "s3_get": Price(0.0004, "thousand GET requests", "[3rd] widely quoted; aws.amazon.com/s3/pricing"),
    # [3rd] https://c3x.dev/blog/cloudwatch-logs-cost-optimization (Standard class ingestion)
    "logs_ingest": Price(0.50, "GB ingested", "[3rd] c3x.dev cloudwatch-logs-cost-optimization"),
    # https://aws.amazon.com/cloudwatch/pricing/ (AWS, free tier: 10 alarms); the rate from bill
    # lines, [3rd] https://amazonwebshark.com/unexpected-cloudwatch-in-the-billing-area
    "alarm": Price(0.10, "alarm-month", "[3rd] amazonwebshark.com; 10 free: aws.amazon.com/cloudwatch/pricing"),
    # https://aws.amazon.com/xray/pricing/ (AWS): $5.00 per million traces recorded, 100,000 free.
    "xray_trace": Price(5.00, "million traces recorded", "AWS: aws.amazon.com/xray/pricing"),
    # [3rd] https://cloudburn.io/blog/amazon-eventbridge-pricing (14 million free a month)
    "scheduler": Price(1.00, "million invocations", "[3rd] cloudburn.io amazon-eventbridge-pricing"),
}

HOURS_PER_MONTH = 730  # AWS's own convention for a month of hours


@dataclass(frozen=True)
class Usage:
    """What one upload and one reconciliation use (assumptions: change them to yours)."""

    memory_gb: float = 0.25  # template.yaml: MemorySize 256
    charge_seconds: float = 0.3  # one invocation: a GetObject, three DynamoDB calls and a Stripe call
    log_kb_per_upload: float = 2.0  # JSON lines: start, report, the handler's own, EMF
    wru_per_upload: float = 4.0  # keyed: the claim, the line, its by_account and by_day index entries (tests/test_bill.py)
    rru_per_upload: float = 1.0  # keyed: the customer mapping's strongly consistent GetItem (who pays), under 4 KB
    traced_share: float = 1.0  # an upper bound: every upload traced (sampling lowers it)
    reconcile_runs_per_month: float = HOURS_PER_MONTH  # every 60 minutes
    reconcile_seconds: float = 2.0
    alarms: int = 19  # template.yaml's alarms (prod)
    ledger_gb: float = 1.0  # the books' size, for point-in-time recovery


def at_rest(usage: Usage = Usage()) -> list[tuple[str, float]]:
    """(line, US dollars) a month with no uploads: what the stack costs by existing."""
    p = PRICES
    runs = usage.reconcile_runs_per_month
    return [
        (f"{usage.alarms} CloudWatch alarms", usage.alarms * p["alarm"].usd),
        (f"reconciliation, {runs:.0f} runs (Lambda)",
         runs / 1e6 * p["lambda_requests"].usd
         + runs * usage.reconcile_seconds * usage.memory_gb * p["lambda_gb_second"].usd),
        (f"EventBridge Scheduler, {runs:.0f} invocations", runs / 1e6 * p["scheduler"].usd),
        (f"point-in-time recovery of a {usage.ledger_gb:g} GB ledger", usage.ledger_gb * p["dynamodb_pitr"].usd),
    ]


def per_million_uploads(usage: Usage = Usage()) -> list[tuple[str, float]]:
    """(line, US dollars) that a million uploads add."""
    p, n = PRICES, 1e6
    return [
        ("S3 PUT (the uploads)", n / 1000 * p["s3_put"].usd),
        ("S3 GET (the handler reads the order)", n / 1000 * p["s3_get"].usd),
        ("Lambda requests", p["lambda_requests"].usd),
        (f"Lambda duration ({usage.charge_seconds:g} s at {usage.memory_gb * 1024:.0f} MB)",
         n * usage.charge_seconds * usage.memory_gb * p["lambda_gb_second"].usd),
        (f"DynamoDB writes ({usage.wru_per_upload:g} units an upload)",
         usage.wru_per_upload * p["dynamodb_wru"].usd),
        (f"DynamoDB reads ({usage.rru_per_upload:g} unit an upload: who pays)",
         usage.rru_per_upload * p["dynamodb_rru"].usd),
        (f"CloudWatch Logs ({usage.log_kb_per_upload:g} KB an upload)",
         n * usage.log_kb_per_upload / 1024 / 1024 * p["logs_ingest"].usd),
        ("X-Ray traces (upper bound: all traced)", usage.traced_share * p["xray_trace"].usd),
    ]


def table(rows: list[tuple[str, float]]) -> list[str]:
    """The rows and their total, as aligned lines."""
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  ${usd:8.2f}" for name, usd in rows]
    return lines + [f"{'total':<{width}}  ${sum(usd for _, usd in rows):8.2f}"]
