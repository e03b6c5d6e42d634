"""Every order gets each named effect, judged per order (docs/one_charge_per_order.md), and a workflow
started again is the same one only where AWS says so. Handlers written as teams write them
(tests/handlers/, each with its verdict and the published fact in its docstring), run through the CLI
on the families that show the point, with one retry setting and one worker.

Found by an adversarial review of effects in other services; each was wrong before this file:
- `sfn_marker_skips_reupload` said holds: an order whose invocation never started its workflow had no
  count at all, and was judged only on the effects it had (idem.explore.judge.verdicts.judge_uploads);
- `sfn_express_starter` said holds: moto answers a StartExecution with the same name and input with the
  execution already running whatever the machine's type (idem.sim.platform.sfn_express);
- a two-order schedule's `effects` were its last upload's counts (idem.explore.run.runner.run_batch);
- `archive_copy_latest`'s wrong content was a double_effect where its retry copied twice.
"""
from __future__ import annotations

import json

from check_cli import HANDLERS, cli, target

SFN = ("--effect", "stepfunctions:StartExecution")
AFTER_DONE = "no fault; a second order at the same name (new version), after the first is done; 0 retries"


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> dict:
    """The CLI's --json report on the named families only, one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    code, out, err = cli(*args, "--retries", retries, "--workers", "1", "--json")
    report = json.loads(out)
    assert report["exit_code"] == code, err[-2000:]
    return report


def by_schedule(report: dict) -> dict[str, dict]:
    return {r["schedule"]: r for r in report["results"]}


def setup(function: str, module: str = "sfn_setup") -> tuple[str, str]:
    return "--setup", f"{HANDLERS / module}.py:{function}"


def test_a_second_order_whose_workflow_never_starts_is_lost_though_the_first_got_its_own(monkeypatch):
    report = check(monkeypatch, target("sfn_marker_skips_reupload"), *SFN, *setup("with_markers"),
                   families="overwrite")
    assert not report["holds"] and report["exit_code"] == 1
    lost = by_schedule(report)[AFTER_DONE]
    assert lost["verdict"] == "silent_loss", lost
    assert "order 2: states:StartExecution 0 times (clean run 1)" in lost["findings"], lost
    assert lost["effects"]["states:StartExecution"] == 1  # one workflow, for the first order


def test_a_standard_workflow_per_order_holds_and_counts_both_orders(monkeypatch):
    """The correct twin: a STANDARD machine, the execution named by account and order id
    (sfn_starter.py). Each order gets its workflow; a schedule's effects are the sum of its uploads'."""
    report = check(monkeypatch, target("sfn_starter"), *SFN, *setup("create"), families="overwrite")
    assert report["holds"] and report["exit_code"] == 0, report.get("smallest_break")
    results = by_schedule(report)
    assert results[AFTER_DONE]["effects"]["states:StartExecution"] == 2
    started = "no fault; a second order at the same name (new version), while the first is after " \
              "states:StartExecution; 0 retries"
    assert results[started]["effects"]["states:StartExecution"] == 2
    retried = [r for name, r in results.items() if name.startswith("no fault; the uploader's retried PUT")]
    assert retried and all(r["effects"]["states:StartExecution"] == 1 for r in retried), retried  # one order


def test_an_older_order_may_go_without_its_workflow_only_under_a_declared_ordering_rule(monkeypatch):
    """sfn_newest_upload_only.py skips an upload older (by S3 sequencer) than one already handled: with
    `--ordering sequencer` that is the handler's declared rule and holds; without it every order is owed
    its workflow."""
    args = (target("sfn_newest_upload_only"), *SFN, *setup("with_markers"))
    declared = check(monkeypatch, *args, "--ordering", "sequencer", families="overwrite", retries="1")
    assert declared["holds"], declared.get("smallest_break")
    undeclared = check(monkeypatch, *args, families="overwrite", retries="1")
    assert not undeclared["holds"]
    lost = [r for r in undeclared["results"] if r["verdict"] == "silent_loss"]
    assert lost and all("order 1: states:StartExecution 0 times (clean run 1)" in r["findings"] for r in lost), lost


def test_an_express_workflow_started_twice_is_two_executions(monkeypatch):
    report = check(monkeypatch, target("sfn_express_starter"), *SFN, *setup("express"), families="faults")
    assert not report["holds"] and report["exit_code"] == 1
    twice = by_schedule(report)["no fault; duplicate; 0 retries"]
    assert twice["verdict"] == "double_effect" and twice["effects"]["states:StartExecution"] == 2, twice
    # the same code on a STANDARD machine holds on the same schedules
    standard = check(monkeypatch, target("sfn_express_starter"), *SFN, *setup("create"), families="faults")
    assert standard["holds"], standard.get("smallest_break")


def test_a_copy_of_the_latest_version_under_the_first_orders_key_is_wrong_content_not_a_second_effect(monkeypatch):
    report = check(monkeypatch, target("archive_copy_latest"), "--effect", "s3:CopyObject",
                   *setup("create", "archive_setup"), families="overwrite", retries="1")
    assert not report["holds"]
    wrong = [r for r in report["results"] if r["verdict"] not in ("exactly_once", "needs_attention", "failed_visibly")]
    assert wrong
    for r in wrong:  # each finding is order 2's bytes under order 1's key, one object per order
        assert r["verdict"] == "silent_mismatch", r
        assert any("s3:CopyObject left other objects than the clean run" in f for f in r["findings"]), r
    # the twin archiving the bytes it read holds on the same schedules
    twin = check(monkeypatch, target("archive_by_order"), "--effect", "s3:PutObject",
                 *setup("create", "archive_setup"), families="overwrite", retries="1")
    assert twin["holds"], twin.get("smallest_break")


# -- the rule itself, per order (idem.explore.judge.verdicts.judge_uploads) ----------------------------
START = "states:StartExecution"


def test_an_order_with_no_count_for_a_named_effect_made_it_zero_times():
    from idem.explore.judge.verdicts import judge_uploads

    orders = [{"provider:charge": 0, START: 1}, {"provider:charge": 0}]
    verdict, findings = judge_uploads(orders, {START: 1}, {START: 1}, [0, 0], unit="order")
    assert (verdict, findings) == ("silent_loss", [f"order 2: {START} 0 times (clean run 1)"])
    # its event in the failure queue: visible, not silent
    assert judge_uploads(orders, {START: 1}, {START: 1}, [0, 1], unit="order")[0] == "failed_visibly"
    # the first order's missing, the second's there: the same (it was judged over the schedule before)
    assert judge_uploads(orders[::-1], {START: 1}, {START: 1}, [0, 0], unit="order")[1] == \
        [f"order 1: {START} 0 times (clean run 1)"]
    # a declared ordering rule lets the older order go without one, never without its money
    assert judge_uploads(orders[::-1], {START: 1}, {START: 1}, [0, 0], unit="order", may_skip=[0]) == \
        ("exactly_once", [])
    verdict, findings = judge_uploads([{"provider:charge": 0, START: 1}, {"provider:charge": 1, START: 1}],
                                      {START: 2}, {"provider:charge": 1, START: 1}, [0, 0], unit="order", may_skip=[0])
    assert verdict == "silent_mismatch" and findings == ["order 1: no charge for the order"]


def test_what_a_queue_delivers_is_judged_over_the_schedule_each_order_its_clean_count():
    from idem.explore.judge.verdicts import judge_uploads

    sends = "sqs:SendMessage"
    orders = [{"provider:charge": 0}, {"provider:charge": 0}]
    assert judge_uploads(orders, {sends: 2}, {sends: 1}, [0, 0], unit="order", shared={sends}) == ("exactly_once", [])
    assert judge_uploads(orders, {sends: 3}, {sends: 1}, [0, 0], unit="order", shared={sends}) == \
        ("double_effect", [f"{sends} 3 times for 2 orders (clean run 1 each)"])
