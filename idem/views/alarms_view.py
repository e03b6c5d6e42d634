"""Chapter 10's alarms: every alarm of a profile, resolved as CloudFormation would, grouped by
what it watches, with when it fires (from its metric) and what a person does (ALARM_TODO, held by
tests/test_ship_and_local_aws_views.py to the template and to README.md's alarm table)."""
from __future__ import annotations

from typing import Any, Mapping

from ..deploy import template as tp


#: What a person does when each alarm fires, in a few words that name the commands README.md's
#: alarm table gives in full for that alarm (`idem redrive`, `sam logs`, `aws lambda invoke`, ...).
#: tests/test_ship_and_local_aws_views.py holds it to the template's alarms and to that table.
ALARM_TODO = {
    "ChargeErrorsAlarm": "read why (sam logs); then idem redrive",
    "ChargeThrottlesAlarm": "none lost: aws sqs get-queue-attributes",
    "AsyncEventsDroppedAlarm": "demo: in the failure queue: idem redrive",
    "DestinationDeliveryFailuresAlarm": "lost: aws lambda invoke, then idem settle",
    "FailureQueueArrivalsAlarm": "fix the cause, then idem redrive",
    "FailureQueueAgeAlarm": "idem redrive today (dropped at 14 days)",
    "UploadQueueAgeAlarm": "none lost; past 7.5 h, idem redrive",
    "NeedsAttentionAlarm": "idem settle (it shows, then asks)",
    "DeclinedAlarm": "a rate: aws logs filter-log-events; find why",
    "PendingAlarm": "a rate: aws logs filter-log-events for pending",
    "ReconcileDifferencesAlarm": "read the report; idem settle or idem refund",
    "ReconcileErrorsAlarm": "read its logs; rerun: aws lambda invoke",
    "ReconcileThrottlesAlarm": "retried; if its queue fills, aws lambda invoke",
    "ReconcileDestinationDeliveryFailuresAlarm": "rerun it: aws lambda invoke",
    "ReconcileFailureQueueArrivalsAlarm": "sam logs, then rerun: aws lambda invoke",
    "ReconcileFailureQueueAgeAlarm": "aws lambda invoke, then aws sqs purge-queue",
    "WebhookErrorsAlarm": "read why (sam logs); Stripe retries 3 days",
    "WebhookThrottlesAlarm": "retried: aws lambda get-function-concurrency",
    "WebhookSignatureAlarm": "signing secret? compare; sam logs if it matches",
}
#: The alarms' families, in the order the chapter shows them.
ALARM_FAMILIES = ("charge function", "queues", "payments", "webhook", "reconciliation")
def alarms(profile: str = "prod") -> dict[str, dict[str, Any]]:
    """The profile's alarms, resolved as CloudFormation would: name -> Properties."""
    parameters = {"Profile": profile}
    expanded = tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"), parameters)
    resolved = tp.resolve(expanded, parameters)
    return {name: alarm["Properties"] for name, alarm in tp.resources_of_type(resolved, "AWS::CloudWatch::Alarm").items()}


def _seconds(n: int) -> str:
    return next((f"{n // size} {unit}{'s' if n != size and unit != 'min' else ''}"
                 for unit, size in (("day", 86400), ("hour", 3600), ("min", 60)) if n % size == 0), f"{n} s")


def alarm_family(name: str, props: Mapping[str, Any]) -> str:
    """charge function, queues, payments, webhook or reconciliation: what the alarm watches."""
    namespace = props.get("Namespace") or props["Metrics"][0]["MetricStat"]["Metric"]["Namespace"]
    if name.startswith("Webhook"):
        return "webhook"
    return "reconciliation" if name.startswith("Reconcile") else {
        "AWS/SQS": "queues", "AWS/Lambda": "charge function"}.get(str(namespace), "payments")


def alarm_trigger(props: Mapping[str, Any]) -> str:
    """When the alarm fires, from its metric, threshold and period: `any in 5 min`, `oldest > 1 day`."""
    if "Metrics" in props:  # metric math: a rate (0 < threshold < 1) or new arrivals
        period, share = _seconds(int(props["Metrics"][0]["MetricStat"]["Period"])), 0 < props["Threshold"] < 1
        return f"> {props['Threshold']:.0%} in {period}" if share else f"new in {period}"
    if props["MetricName"] == "ApproximateAgeOfOldestMessage":
        return f"oldest > {_seconds(int(props['Threshold']))}"
    if props["Threshold"] == 0 and props["EvaluationPeriods"] == 1:
        return f"any in {_seconds(int(props['Period']))}"
    return f"> {props['Threshold']} in {props['EvaluationPeriods']} x {_seconds(int(props['Period']))}"


def alarm_rows(profile: str = "prod") -> list[dict[str, str]]:
    """One row per alarm: its family, name, when it fires and what to do."""
    found = alarms(profile)
    return [{"family": alarm_family(name, props), "alarm": name,
             "fires on": alarm_trigger(props), "do": ALARM_TODO[name]}
            for name, props in found.items()]


def alarms_text(todo: Mapping[str, str] | None = None, profile: str = "prod") -> str:
    """Every alarm of the profile, grouped by what it watches: when it fires and what to do,
    naming the commands (README.md's alarm table writes each in full)."""
    rows = alarm_rows(profile)
    if todo is not None:
        rows = [{**row, "do": todo[row["alarm"]]} for row in rows]
    for row in rows:  # short names: the family says the rest
        row["short"] = row["alarm"].removesuffix("Alarm").removeprefix("Reconcile") or row["alarm"]
    width = max(len(row["short"]) for row in rows)
    lines = [f"{len(rows)} alarms, each mailed to the stack's topic (names shown without 'Alarm')"]
    for family in ALARM_FAMILIES:
        members = [row for row in rows if row["family"] == family]
        if members:
            lines.append(f"{family} ({len(members)}{', names start with Reconcile' if family == 'reconciliation' else ''}):")
            lines += [f"  {row['short']:{width}}  {row['fires on']:15}  {row['do']}" for row in members]
    return "\n".join(lines)
