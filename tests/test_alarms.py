"""Each alarm means one thing and clears: template.yaml's alarms, read against README.md's alarm
table, and their metric math evaluated on series a person would meet (numpy stands in for
CloudWatch's FILL, DIFF and IF: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from idem.core.handlers import keyed_events
from idem.deploy import template as tp

ROOT = Path(__file__).resolve().parents[1]


def _prod_alarms() -> dict[str, dict[str, Any]]:
    expanded = tp.translate(tp.with_code(tp.load(), "b", "k"), {"AlarmEmail": "ops@example.com"})
    resolved = tp.resolve(expanded, {"AlarmEmail": "ops@example.com"})
    return {name: a["Properties"] for name, a in tp.resources_of_type(resolved, "AWS::CloudWatch::Alarm").items()}


@pytest.fixture(scope="module")
def alarms() -> dict[str, dict[str, Any]]:
    return _prod_alarms()


def _readme_rows() -> dict[str, tuple[str, str]]:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### The alarms, and what to do when one fires", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        name, means, do = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows[name.strip("`")] = (means, do)
    return rows


def evaluate(alarm: dict[str, Any], series: dict[str, list[float]]) -> np.ndarray:
    """The value a metric math alarm watches, point by point (nan: no data point)."""
    (returned,) = [m for m in alarm["Metrics"] if m.get("ReturnData")]
    names = {m["Id"]: np.array(series[m["Id"]], dtype=float) for m in alarm["Metrics"] if "MetricStat" in m}
    expression = re.sub(r"\bIF\(", "where(", returned["Expression"])
    functions = {"FILL": lambda x, v: np.where(np.isnan(x), v, x),
                 "DIFF": lambda x: np.concatenate([[np.nan], np.diff(x)]),
                 "where": lambda c, a, b: np.where(c, a, b)}
    with np.errstate(divide="ignore", invalid="ignore"):  # np.where evaluates both branches
        return np.asarray(eval(expression, {"__builtins__": {}}, {**functions, **names}), dtype=float)


def fires(alarm: dict[str, Any], values: np.ndarray) -> list[bool]:
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold" and alarm["EvaluationPeriods"] == 1
    return [bool(v > alarm["Threshold"]) for v in np.nan_to_num(values, nan=0.0)]


def test_every_alarm_in_the_template_has_a_readme_row_that_says_what_it_means_and_what_to_do(alarms):
    rows = _readme_rows()
    assert set(rows) == set(alarms)
    command = re.compile(r"`((python -m )?idem (settle|refund|redrive)|aws (lambda|sqs|logs) |sam logs )[^`]*`")
    for name, (means, do) in rows.items():
        assert means and command.search(do), f"{name}: its row names no command"


def test_a_parked_order_is_alarmed_on_the_metric_counted_once_per_order(alarms):
    props = alarms["NeedsAttentionAlarm"]
    assert (props["Namespace"], props["MetricName"]) == (keyed_events.METRICS_NAMESPACE, "needs_attention")
    assert props["Statistic"] == "Sum" and props["TreatMissingData"] == "notBreaching"
    # a parked order's message received three times: counted once, so the alarm clears
    counted_once = np.array([1, 0, 0], dtype=float)  # 5-minute sums of needs_attention
    assert [bool(v > props["Threshold"]) for v in counted_once] == [True, False, False]


def test_every_idem_metric_an_alarm_reads_is_one_the_handler_emits(alarms):
    read = set()
    for props in alarms.values():
        metrics = [m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m] or [props]
        read |= {m["MetricName"] for m in metrics if m["Namespace"] == keyed_events.METRICS_NAMESPACE
                 and tp.ref_name(m["Dimensions"][0]["Value"]) == tp.FUNCTION}
    assert read <= set(keyed_events.OUTCOMES)


def test_declines_alarm_on_a_share_of_attempts_not_on_one_decline(alarms):
    props = alarms["DeclinedAlarm"]
    assert props["Threshold"] == 0.2
    hourly = {"declined": [1, 3, 5, np.nan, 40], "charged": [0, 97, 15, np.nan, 160]}
    # one decline alone; 3 of 100; 5 of 20 (25%); a quiet hour; 40 of 200 (20%, not above)
    assert fires(props, evaluate(props, hourly)) == [False, False, True, False, False]
    (rate,) = [m for m in props["Metrics"] if m.get("ReturnData")]
    assert {m["MetricStat"]["Period"] for m in props["Metrics"] if "MetricStat" in m} == {3600}
    assert "declined" in rate["Expression"] and "charged" in rate["Expression"]


@pytest.mark.parametrize("name", ["FailureQueueArrivalsAlarm", "ReconcileFailureQueueArrivalsAlarm"])
def test_a_failure_queue_alarms_on_new_arrivals_and_clears_while_the_first_still_waits(alarms, name):
    props = alarms[name]
    # 5-minute points: a message redriven in by the upload queue's policy (not "sent": SQS counts
    # no NumberOfMessagesSent for it), then it waits; a second one sent by Lambda's on-failure
    # destination; both redriven out by a person; nothing.
    series = {"visible": [0, 1, 1, 1, 2, 0, 0], "sent": [np.nan, 0, 0, 0, 1, 0, np.nan]}
    assert fires(props, evaluate(props, series)) == [False, True, False, False, True, False, False]


def test_each_failure_queue_also_alarms_on_its_oldest_message_which_clears_when_emptied(alarms):
    for name, queue in (("FailureQueueAgeAlarm", "FailureQueue"), ("ReconcileFailureQueueAgeAlarm", "ReconcileFailureQueue")):
        props = alarms[name]
        assert props["MetricName"] == "ApproximateAgeOfOldestMessage" and props["Statistic"] == "Maximum"
        assert tp.ref_name(props["Dimensions"][0]["Value"]) == queue and props["Threshold"] == 86400
        assert props["TreatMissingData"] == "notBreaching"  # an empty queue reports no age: OK again


def test_no_alarm_watches_a_queue_depth_that_stays_red_until_someone_empties_it(alarms):
    for name, props in alarms.items():
        if "Metrics" not in props:
            assert props["MetricName"] != "ApproximateNumberOfMessagesVisible", name


def test_pending_charges_alarm_on_a_share_of_attempts_since_the_webhook_settles_each_one(alarms):
    props = alarms["PendingAlarm"]
    assert props["Threshold"] == 0.2
    assert {m["MetricStat"]["Period"] for m in props["Metrics"] if "MetricStat" in m} == {3600}
    hourly = {"pending": [1, 2, 6, np.nan, 3, 10], "charged": [0, 98, 14, np.nan, 12, 40],
              "declined": [0, 0, 0, np.nan, 1, 0]}
    # one pending charge alone; 2 of 100; 6 of 20 (30%); a quiet hour; 3 of 16 (under 20 attempts); 10 of 50 (20%)
    assert fires(props, evaluate(props, hourly)) == [False, False, True, False, False, False]


def test_a_stuck_pending_charge_is_still_alarmed_by_the_reconciliation_not_left_to_the_rate():
    """PendingAlarm no longer pages on one pending charge: that is safe only because a charge still
    pending when its window is judged is a reconciliation finding, and findings raise Differences."""
    from idem.core.reconcile import compare as reconcile_compare
    from idem.core.reconcile.report import UploadSeen

    upload = UploadSeen(bucket="uploads", key="alice/A-1.json", version_id="v1", etag="e", at=100.0)
    key = "charge#order#" + "a" * 64
    report = reconcile_compare.compare([], [], 0.0, 3600.0, [(upload, key)],
                                       status_of=lambda k: ("pending", {"charge_id": "pi_1"}))
    assert [f.kind for f in report.findings] == ["pending"] and report.differences == 1
    assert "idem settle --key " + key in report.findings[0].command


@pytest.mark.parametrize("name, metric", [("WebhookErrorsAlarm", "Errors"), ("WebhookThrottlesAlarm", "Throttles")])
def test_the_webhook_alarms_on_its_own_errors_and_throttles_in_prod(alarms, name, metric):
    props = alarms[name]
    assert (props["Namespace"], props["MetricName"], props["Statistic"]) == ("AWS/Lambda", metric, "Sum")
    assert tp.ref_name(props["Dimensions"][0]["Value"]) == "WebhookFunction"
    assert (props["Period"], props["Threshold"], props["TreatMissingData"]) == (300, 0, "notBreaching")
    # a failed delivery in five minutes fires; the next five minutes with none clear it
    assert fires(props, np.array([np.nan, 1, 0, np.nan])) == [False, True, False, False]
    demo = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), {"Profile": "demo"}), {"Profile": "demo"})
    assert name not in demo["Resources"] and "WebhookFunction" not in demo["Resources"]  # prod's, like the URL
