"""Handlers written as teams write them (tests/handlers/), each with the verdict a correct checker
must give: breaks where money or books go wrong, holds where they do not, and a tool error (exit 2
or 3, never 1) where the handler cannot be judged."""
from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from idem.cli import main
from idem.explore.check import check_handler
from idem.explore.errors import CheckCouldNotFinish, CheckInputError
from idem.explore.report.check_report import SCHEMA_VERSION
from idem.explore.run import runner

from check_cli import new_breaks

HANDLERS = Path(__file__).parent / "handlers"
FAST = dict(retries=(0,), workers=1)  # no retry setting but 0: each check is ~200 schedules
SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text())


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name, effects, verdict, finding", [
    ("swallows_commit_error", (), "silent_mismatch", r"a charge with no ledger line"),
    ("new_key_on_500", (), "double_charge", r"2 charges for one upload"),
    # the smallest break's count follows the installed botocore's resends (2 at boto3 1.44, 5 at 1.35)
    ("standard_notifier", ("sqs:SendMessage",), "double_effect", r"sqs:SendMessage [2-9] times"),
    # botocore resends a PutItem whose answer was lost; the resend fails on the handler's own claim
    # (https://docs.aws.amazon.com/boto3/latest/guide/retries.html: ReadTimeoutError is retried)
    # (at boto3 1.35 the smallest such schedule has two orders: "order 2: no charge for the order")
    ("claim_says_taken", (), "silent_loss", r"no charge for the (upload|order)"),
    # a run of 3 throttles outlasts a helper that tries 3 times, then logs and returns success
    ("books_retry_helper", (), "silent_mismatch", r"a charge with no ledger line"),
])
def test_a_handler_that_loses_money_or_books_breaks_and_the_break_is_named(name, effects, verdict, finding):
    report = check_handler(target(name), effects=effects, **FAST)
    assert not report.holds
    assert report.tally().get(verdict, 0) > 0, report.explain()
    smallest = report.smallest(verdict)
    assert any(re.search(finding, f) for f in smallest.findings), smallest.findings


#: the families that send an order again past Stripe's 24-hour key window (idem/explore/families/timed.py)
PAST_KEY_WINDOW = {"late", "again"}


@pytest.mark.parametrize("name, effects", [("keyed_books", ())])
def test_a_correct_handler_holds_with_its_books_judged(name, effects):
    report = check_handler(target(name), effects=effects, **FAST)
    assert report.holds, report.explain()
    assert report.baseline.get("books:line") == 1  # the books were weighed, not skipped
    assert "sqs:SendMessage" not in effects or report.baseline["sqs:SendMessage"] == 1


#: what the merged money contract (docs/money_contract.md) added that handlers written before it miss:
#: family -> the verdict it gives them. Past Stripe's 24-hour key window (late, again) they have only
#: Stripe's key behind the charge and never search Stripe by key: charged again. They key an order by
#: bucket and order id, so two accounts' order "1001" are one order to them: the second never charged.
MERGED_CONTRACT = {"late": "double_charge", "again": "double_charge", "accounts": "silent_loss"}


@pytest.mark.parametrize("name, effects", [
    # asks whose claim failed its condition (ReturnValuesOnConditionCheckFailure=ALL_OLD): its own goes on
    ("claim_checks_owner", ()),
    # its done record keeps the charge id too: one charge, booked once (the books judged per charge)
    ("done_record_with_charge", ()),
    # two orders at one name: each its own ledger object under its own order id (ledger/ORDER_ID.json)
    ("ledger_objects", ("s3:PutObject",)),
])
def test_a_handler_correct_before_the_merge_breaks_only_where_the_money_contract_moved(name, effects):
    """These held before the merge, and still hold in every family but the ones the merged contract
    added (MERGED_CONTRACT): what each was written to show (its comment) is still judged correct."""
    report = check_handler(target(name), effects=effects, **FAST)
    assert report.broken, report.explain()
    assert all(MERGED_CONTRACT.get(r.schedule.dimension) == r.verdict for r in report.broken), report.explain()
    assert report.baseline.get("books:line") == 1  # the books were weighed, not skipped


def test_the_saved_500_is_counted_where_the_provider_records_it():
    report = check_handler(target("new_key_on_500"), **FAST)
    (first,) = [r for r in report.results if r.schedule.fault and r.schedule.fault.outcome == "provider_500"
                and r.schedule.fault.times == "1" and r.schedule.delivery == "single" and r.schedule.dimension == "faults"]
    assert first.verdict == "double_charge" and first.effects["provider:charge"] == 2
    assert [a.outcome for a in first.attempts] == ["ok"]  # one invocation, two charges, no error seen


def test_a_misspelled_effect_is_bad_input_naming_the_nearest_operation():
    code, out, err = cli(target("keyed_books"), "--effect", "sqs:SendMesage", "--retries", "0", "--workers", "1")
    assert code == 2 and "sqs has no operation 'SendMesage'; did you mean sqs:SendMessage" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name, says", [
    ("import_error", "No module named 'no_such_package_for_the_check'"),
    ("syntax_error", "SyntaxError"),
])
def test_a_handler_that_cannot_load_is_exit_2_with_its_own_traceback(name, says):
    code, out, err = cli(target(name), "--workers", "1")
    assert code == 2, err
    assert "the handler's own traceback" in err and f"{name}.py" in err and says in err
    assert "idem/sim/runtime/" not in err  # the runtime's frames are not the handler's
    assert err.strip().splitlines()[-1].startswith("idem check: ")


def test_a_handler_that_exits_the_process_is_exit_3():
    code, out, err = cli(target("exits"), "--workers", "1")
    assert code == 3 and "sys.exit(3)" in err
    assert len(err.strip().splitlines()) == 1


def test_a_call_to_the_internet_is_refused_and_named():
    with pytest.raises(CheckCouldNotFinish, match="example.com"):
        check_handler(target("calls_the_internet"), **FAST)


@pytest.mark.concurrency
def test_a_handler_that_waits_on_the_clock_is_bounded_and_exit_3(monkeypatch):
    monkeypatch.setattr(runner, "SCHEDULE_SECONDS", 1.0)
    with pytest.raises(CheckCouldNotFinish, match="without finishing"):
        check_handler(target("waits_for_the_clock"), **FAST)


@pytest.mark.parametrize("args, code", [
    (["keyed_books"], 0), (["swallows_commit_error"], 1), (["import_error"], 2), (["exits"], 3),
    (["keyed_books", "--effect", "sqs:SendMesage"], 2),
])
def test_json_is_always_printed_and_matches_its_schema(args, code):
    got, out, _ = cli(target(args[0]), *args[1:], "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    assert got == code == report["exit_code"] and report["schema_version"] == SCHEMA_VERSION
    if code < 2:
        assert len(report["results"]) == report["schedules"]  # one entry per schedule


def test_pins_bug_a_fifo_deduplication_window_is_shorter_than_a_copy_can_come():
    """SQS FIFO drops a second send with the same deduplication id for 5 minutes
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html);
    a copy of S3's event can come hours later (idem/explore/families/timings.py), and then the notice goes twice."""
    report = check_handler(target("fifo_notifier"), effects=("sqs:SendMessage",), **FAST)
    late = [r for r in report.broken if r.schedule.dimension == "late" and r.schedule.later.seconds == 901.0]
    assert late and late[0].verdict == "double_effect" and late[0].effects["sqs:SendMessage"] == 2
    (at_once,) = [r for r in report.results if r.schedule.dimension == "late" and r.schedule.timing
                  and r.schedule.timing.name == "low ends"]
    assert not at_once.breaks  # a copy within 5 minutes is dropped by the queue


def test_books_can_be_named_or_skipped():
    with pytest.raises(CheckInputError, match="TABLE_ENV:ATTRIBUTE"):
        check_handler(target("keyed_books"), books="charge_id", **FAST)
    skipped = check_handler(target("swallows_commit_error"), books="none", **FAST)
    assert "not judged" in skipped.books_judged()  # money alone cannot see it: only its money breaks,
    # the order sent again after Stripe pruned its key (a charge whose books failed is charged anew)
    assert skipped.broken and all(r.schedule.dimension in PAST_KEY_WINDOW and r.verdict == "double_charge"
                                  for r in skipped.broken)


def test_a_powertools_handler_is_watched_through_its_own_session_and_clock():
    report = check_handler(target("powertools_keyed"), retries=(1,), workers=1)
    # Powertools deletes its record when the function raises, and keys the charge by Stripe's key: the
    # order sent again past Stripe's 24-hour window is charged again (DESIGN.md's anchors name the gap)
    assert not {r.schedule.dimension for r in new_breaks(report)} - PAST_KEY_WINDOW, report.explain()
    assert all(r.verdict == "double_charge" for r in report.broken)
    # Powertools' own session: its record writes are boundaries the check faults at
    assert sum(str(b).endswith("dynamodb:PutItem") for b in report.boundaries) >= 2
    (crash,) = [r for r in report.results if r.schedule.delivery == "single" and r.schedule.fault
                and str(r.schedule.fault.how) == "crash" and str(r.schedule.fault.at) == "after provider:charge"
                and r.schedule.fault.times == "1"]
    assert crash.verdict == "exactly_once", crash.findings  # the retry takes over, whenever it comes:
    first, retry = (a.start for a in crash.attempts)  # drawn from Lambda's range (idem/explore/families/timings.py)
    assert first == 0.0 and 60.0 <= retry <= 6 * 3600


def test_a_step_functions_starter_by_execution_name_holds():
    """StartExecution with the name and input of a running execution answers with that execution
    (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html; moto
    agrees): a retry, a copy or the uploader's retried PUT starts no second one."""
    code, out, err = cli(target("sfn_starter"), "--setup", f"{HANDLERS / 'sfn_setup.py'}:create",
                         "--effect", "stepfunctions:StartExecution", "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 0 and report["holds"], report.get("smallest_break") or err
    assert report["baseline"]["states:StartExecution"] == 1
