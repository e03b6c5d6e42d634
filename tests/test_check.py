"""`idem check`: any handler through every schedule; the patterns called right; bad input refused."""
from __future__ import annotations

import contextlib
import io
import json
import textwrap

import pytest

from idem.explore.check import check_handler
from idem.explore.families.build import schedules_for
from idem.cli import main
from idem.explore.families.runs import EVERY_CALL
from idem.sim.sdk_retries import EVERY
from idem.sim.faults import END, Boundary, Side
from idem.explore.judge.verdicts import judge_effects

FAST = dict(retries=(1,), workers=1)  # one retry setting keeps the suite quick
#: the families that send an order again past Stripe's 24-hour key window (idem/explore/families/timed.py): a
#: handler whose only guard is Stripe's key charges again there
PAST_KEY_WINDOW = {"late", "again"}

# A handler nobody has seen before: it charges without a key, then writes down that it did.
CHARGE_THEN_RECORD = '''
import os, boto3

def make_provider():
    raise RuntimeError("the check replaces this")

_provider = None

def lambda_handler(event, context):
    global _provider
    _provider = _provider or make_provider()
    dynamodb = boto3.client("dynamodb")
    for record in event["Records"]:
        obj = record["s3"]["object"]  # the order: its file's name and content (docs/one_charge_per_order.md: an
        key = obj["key"] + "#" + obj["eTag"]  # uploader's retried PUT of the same bytes is the same order)
        seen = dynamodb.get_item(TableName=os.environ["LEDGER_TABLE"], Key={"pk": {"S": key}})
        if "Item" in seen:
            continue
        _provider.charge(customer="c", amount=100, currency="usd", reference=key)
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": key}})
    return {"ok": True}
'''

# The same handler, fixed: the provider gets a key made from the upload, so a retry replays.
KEYED_CHARGE = CHARGE_THEN_RECORD.replace('reference=key)', 'reference=key, idempotency_key="charge#" + key)')

# Correct about money, careless about a second effect: it adds to a counter on every attempt.
COUNTS_TWICE = KEYED_CHARGE.replace(
    '        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": key}})',
    '        dynamodb.update_item(TableName=os.environ["LEDGER_TABLE"], Key={"pk": {"S": "total"}},\n'
    '                             UpdateExpression="ADD n :one",\n'
    '                             ExpressionAttributeValues={":one": {"N": "1"}})\n'
    '        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": key}})')


def write(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return f"{path}:lambda_handler"


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("pattern, breaks_with", [("naive", "double_charge"),
                                                   ("claim_first", "silent_loss"),
                                                   ("robust", "double_charge")])
def test_pins_bug_the_broken_patterns_exit_1_and_name_their_breaks(pattern, breaks_with):
    code, out, _ = cli(pattern, "--retries", "1", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1 and not report["holds"]
    assert report["verdicts"].get(breaks_with, 0) > 0
    assert report["smallest_break"]["timeline"]


def test_the_keyed_pattern_holds_and_says_what_it_assumed_of_the_deployment():
    """Without --template a failed event is given a failure queue: a holds says it assumed one
    (docs/check_from_a_template.md P16), since Lambda discards it where there is none."""
    code, out, _ = cli("keyed", "--retries", "1", "--workers", "1")
    assert code == 0, out
    assert "holds: no double effect" in out
    assert "assumed: a failed event reaches a failure destination" in out and "Pass --template" in out, out[-800:]


def test_a_holds_where_no_order_went_through_says_so(monkeypatch):
    """A "holds" is about money moved wrongly. Where no schedule ended exactly_once, every order
    failed though the clean run's went through (a module kept from one execution environment for the
    next did that: docs/reliability.md): the report says so, under the "holds"."""
    from dataclasses import replace

    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "runs")
    report = check_handler("keyed", retries=(0,))
    assert report.holds and "not one schedule ended exactly_once" not in report.explain()
    stopped = replace(report, results=[replace(r, verdict="failed_visibly") for r in report.results])
    assert stopped.holds and "holds: no double effect" in stopped.explain()
    assert "not one schedule ended exactly_once" in stopped.explain()


def test_the_handler_to_copy_holds_in_every_schedule():
    code, out, _ = cli("idem.core.handlers.keyed:lambda_handler", "--json")  # all retries, 2 workers
    report = json.loads(out)
    assert code == 0 and report["holds"] and report["breaks"] == 0
    assert report["schedules"] > 900 and report["verdicts"]["exactly_once"] > 600


def test_a_new_handler_breaks_and_its_fix_holds(tmp_path):
    broken = check_handler(write(tmp_path, "charge_then_record", CHARGE_THEN_RECORD), **FAST)
    fixed = check_handler(write(tmp_path, "keyed_charge", KEYED_CHARGE), **FAST)
    assert broken.tally().get("double_charge", 0) > 0 and not broken.holds
    # the key fixes every retry and copy; past Stripe's 24-hour key window it charges again (a key is
    # its only guard for an order whose record was never written)
    assert not {r.schedule.dimension for r in fixed.broken} - PAST_KEY_WINDOW, fixed.explain()
    smallest = broken.smallest_break()
    assert smallest.schedule.delivery == "single"  # the smallest story: one delivery and a retry
    assert smallest.effects["provider:charge"] == 2


def test_a_named_effect_counts_like_a_charge(tmp_path):
    target = write(tmp_path, "counts_twice", COUNTS_TWICE)
    money_only = check_handler(target, **FAST)
    with_counter = check_handler(target, effects=["dynamodb:UpdateItem"], **FAST)
    assert not {r.schedule.dimension for r in money_only.broken} - PAST_KEY_WINDOW
    assert with_counter.tally().get("double_effect", 0) > 0


def test_the_boundaries_come_from_a_clean_run(tmp_path):
    report = check_handler(write(tmp_path, "keyed_charge", KEYED_CHARGE), **FAST)
    assert [str(b) for b in report.boundaries] == [
        "before dynamodb:GetItem", "after dynamodb:GetItem", "before provider:charge",
        "after provider:charge", "before dynamodb:PutItem", "after dynamodb:PutItem",
        "after the handler returned"]


def test_schedules_leave_out_twins():
    calls = [Boundary("dynamodb:PutItem", 1, Side.BEFORE), Boundary("dynamodb:PutItem", 1, Side.AFTER), END]
    found = schedules_for(calls, retries=(0,))
    single = [s for s in found if s.delivery == "single" and s.dimension == "faults"]  # (again is single too)
    # with no retry only arrival 1 can happen: 3 exception places + 2 crash places, and no fault
    assert len(single) == 6
    # and the runs: throttled 2, 3 or every time before the call; 2 or every SDK attempt's answer lost after it
    assert sorted((str(s.fault.at), s.fault.run) for s in found if s.dimension == "runs") == [
        ("after dynamodb:PutItem", 2), ("after dynamodb:PutItem", EVERY), ("before dynamodb:PutItem", 2),
        ("before dynamodb:PutItem", 3), ("before dynamodb:PutItem", EVERY_CALL)]
    crash_places = {s.fault.at for s in single if s.fault and s.fault.how.value == "crash"}
    assert crash_places == {calls[0], calls[1]}  # a crash before a call is one after the last


@pytest.mark.parametrize("effects, baseline, dlq, verdict", [
    ({"provider:charge": 2}, {"provider:charge": 1}, 0, "double_charge"),
    ({"provider:charge": 1, "sqs:SendMessage": 2}, {"provider:charge": 1, "sqs:SendMessage": 1}, 0, "double_effect"),
    ({"provider:charge": 1}, {"provider:charge": 1}, 0, "exactly_once"),
    ({"provider:charge": 1}, {"provider:charge": 1}, 1, "needs_attention"),
    ({"provider:charge": 1, "sqs:SendMessage": 0}, {"provider:charge": 1, "sqs:SendMessage": 1}, 0, "silent_mismatch"),
    ({"provider:charge": 0}, {"provider:charge": 1}, 0, "silent_loss"),
    ({"provider:charge": 0}, {"provider:charge": 1}, 1, "failed_visibly"),
])
def test_verdicts_compare_each_effect_with_the_clean_run(effects, baseline, dlq, verdict):
    assert judge_effects(effects, baseline, dlq) == verdict


@pytest.mark.parametrize("args, says", [
    (["no_colon"], "is not MODULE:FUNCTION"),
    (["no_such_module_here:lambda_handler"], "cannot find module"),
    (["idem.core.handlers.keyed:no_such_function"], "defines no no_such_function"),
    (["missing.py:lambda_handler"], "no file missing.py"),
    (["keyed", "--effect", "SendMessage"], "is not SERVICE:Operation"),
    (["keyed", "--env", "JUSTANAME"], "is not NAME=VALUE"),
    (["keyed", "--retries", "5"], "0, 1 or 2"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    code, out, err = cli(*args)
    assert code == 2 and says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_edited_handler_file_is_checked_as_it_now_is(tmp_path):
    target = write(tmp_path, "my_handler", CHARGE_THEN_RECORD)
    assert not check_handler(target, **FAST).holds
    write(tmp_path, "my_handler", KEYED_CHARGE)  # the reader fixes the same file
    assert not {r.schedule.dimension for r in check_handler(target, **FAST).broken} - PAST_KEY_WINDOW


def test_a_handler_that_fails_on_a_clean_run_breaks_with_that_runs_timeline(tmp_path):
    target = write(tmp_path, "always_fails", "def lambda_handler(event, context):\n    raise KeyError('TABLE')\n")
    report = check_handler(target, **FAST)
    assert not report.holds and len(report.results) == 1 and report.results[0].clean
    assert "the clean run fails, before any fault: KeyError: 'TABLE'" in report.results[0].findings[0]
    code, out, _ = cli(target, "--json", "--workers", "1")
    report = json.loads(out)
    assert code == 1 == report["exit_code"] and report["breaks"] == 1
    assert any("KeyError" in line for line in report["smallest_break"]["timeline"])


def test_the_report_counts_the_schedules_each_dimension_adds(tmp_path):
    report = check_handler(write(tmp_path, "keyed_charge", KEYED_CHARGE), **FAST)
    dims = report.dimensions()
    places = 1 + 3  # the copy places: before the first call, after each of the 3 calls
    failing = 7 + places  # an exception at each of the 7 boundaries, a crash at each copy place
    # versioned and unversioned x a second order or the retried PUT: after the first, at each
    # place, or between its failed attempt and the retry (one retry setting, 1)
    assert dims["overwrite"] == 2 * 2 * (1 + places + failing) + 2  # + a second order at a 1,024-byte name
    assert dims["slow"] == 2 * 3 * 2  # each call's request side and answer side, with a copy meanwhile or alone
    assert sum(dims.values()) == len(report.results)
    assert report.to_json()["dimensions"] == dims
    assert f"{dims['slow']} slow" in report.explain()
