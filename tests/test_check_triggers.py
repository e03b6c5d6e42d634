"""`idem check --trigger sqs|eventbridge`: the SQS event source mapping's rules on the local runtime,
and the verdicts a correct checker must give handlers fed by SQS and by EventBridge
(tests/handlers/sqs_*.py, eventbridge_*.py)."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import jsonschema
import pytest
from check_cli import new_breaks

from idem.cli import main
from idem.explore.check import check_handler, discover
from idem.explore.errors import CheckInputError
from idem.explore.families.schedule import Schedule
from idem.explore.judge.books import Books
from idem.explore.run.runner import order_body, run_batch
from idem.explore.target.target import resolve
from idem.explore.families import timed
from idem.explore.judge.verdicts import BREAKS
from idem.sim.runtime import on_clock
from idem.sim.faults import Boundary, FaultPlan, How, Side
from idem.sim.triggers import SqsFedLambda, SqsMapping, eventbridge_event
from idem.sim.world import LocalWorld

HANDLERS = Path(__file__).parent / "handlers"
SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text())


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()


# -- the mapping's rules, on the runtime ------------------------------------------------------
@pytest.fixture
def world():
    with LocalWorld(prefix="trig") as w:
        yield w


def sqs_runtime(world, fault=None, **mapping):
    env = {**world.env(), "AWS_DEFAULT_REGION": "us-east-1"}
    return SqsFedLambda(world, env, fault=fault, handler=target("sqs_keyed"),
                        mapping=SqsMapping(**mapping))


def send_two(world, runtime):
    for n, name in enumerate(("a.csv", "b.csv"), start=1):  # two orders (sqs_keyed reads each order_id)
        runtime.send_message(json.dumps(world.event(world.upload(f"acct/{name}", order_body(n)))))


def test_a_batch_holds_every_visible_message_and_a_success_deletes_them(world):
    runtime = sqs_runtime(world)
    send_two(world, runtime)
    (attempt,) = runtime.run()
    assert attempt.outcome == "ok" and len(world.provider().charges()) == 2
    assert all(m.gone for m in runtime.messages) and world.failure_queue_depth() == 0


def test_only_the_messages_reported_in_batchItemFailures_come_back_after_the_visibility_timeout(world):
    # the second message's charge fails once: the handler reports it, the first is deleted
    runtime = sqs_runtime(world, FaultPlan(Boundary("provider:charge", 2, Side.BEFORE), "1"))
    send_two(world, runtime)
    first, second = runtime.run()
    assert first.outcome == "partial" and "1 of 2" in first.error
    assert second.start == 180.0 and second.attempt == 2 and second.outcome == "ok"
    assert [c.boundary.nth for c in second.crossings if c.boundary.call == "provider:charge"] == [1, 1]
    assert len(world.provider().charges()) == 2


def test_a_message_received_more_than_maxReceiveCount_times_moves_to_the_dead_letter_queue(world):
    runtime = sqs_runtime(world, FaultPlan(Boundary("provider:charge", 1, Side.BEFORE), "always"),
                          max_receive_count=2)
    runtime.send_message(json.dumps(world.event(world.upload("acct/a.csv", order_body(1)))))
    attempts = runtime.run()
    assert [a.start for a in attempts] == [0.0, 180.0]  # two receives, then the redrive
    with on_clock(world.clock):  # moto's message retention reads the clock the message was sent on
        (body,) = world.failure_queue()
    assert body["Records"][0]["s3"]["object"]["key"] == "acct/a.csv"  # the message itself, not Lambda's record


def test_a_function_error_returns_the_whole_batch(world):
    runtime = sqs_runtime(world, FaultPlan(Boundary("provider:charge", 2, Side.BEFORE), "1", How.CRASH))
    send_two(world, runtime)
    first, second = runtime.run()
    assert first.outcome == "crash" and second.start == 180.0
    # both messages come back: each order file is read again (the first, booked, is then skipped)
    assert [c.boundary for c in second.crossings].count(Boundary("s3:GetObject", 2, Side.BEFORE)) == 1


@pytest.mark.parametrize("result, failed", [
    ({"batchItemFailures": []}, set()),  # empty: the whole batch succeeded
    ({"batchItemFailures": None}, set()),  # null: the same
    (None, set()),  # no response
    ({"batchItemFailures": [{"itemIdentifier": "B"}]}, {"B"}),
    ({"batchItemFailures": [{"itemIdentifier": ""}]}, {"A", "B"}),  # empty id: the whole batch failed
    ({"batchItemFailures": [{"itemIdentifier": None}]}, {"A", "B"}),
    ({"batchItemFailures": [{"itemIdentifier": "Z"}]}, {"A", "B"}),  # an id not in the batch
])
def test_partial_batch_responses_follow_lambdas_rules(world, result, failed):
    from idem.sim.triggers import Batch, Message

    runtime = sqs_runtime(world)
    batch = Batch([Message("A", "{}", 0.0), Message("B", "{}", 0.0)])
    assert runtime.reported_failures(result, batch)[0] == failed
    off = sqs_runtime(world, report_batch_item_failures=False)
    assert off.reported_failures(result, batch)[0] == set()  # ignored without ReportBatchItemFailures


def test_a_visibility_timeout_shorter_than_the_function_timeout_is_refused(world):
    with pytest.raises(ValueError, match="visibility timeout"):
        sqs_runtime(world, visibility_timeout=10.0)


def test_the_eventbridge_event_is_what_keyeds_parser_reads(world):
    from idem.core.events import read_event

    obj = world.upload("alice/from eventbridge.csv")
    event = eventbridge_event(obj)
    assert event["detail"]["object"]["key"] == "alice/from eventbridge.csv"  # not URL-encoded
    (read,) = read_event(event).objects
    assert (read.key, read.version_id, read.sequencer) == (obj.key, obj.version_id, obj.sequencer)
    assert eventbridge_event(obj)["id"] == event["id"] != eventbridge_event(world.upload("alice/x.csv"))["id"]


# -- verdicts: SQS-fed handlers --------------------------------------------------------------
RETRIED_PUT = ("no fault; the uploader's retried PUT (same bytes) (new version), after the first is done; 0 retries",
               "no fault; the uploader's retried PUT (same bytes) (new version), its message in the same batch "
               "as the first's; 0 retries")


def test_a_correct_sqs_handler_holds():
    report = check_handler(target("sqs_keyed"), retries=(0,), trigger="sqs")
    assert report.holds, report.explain()
    assert report.trigger == "sqs" and report.baseline == {"provider:charge": 2, "books:line": 2}
    # the exploration's size for this handler, retries 0: the faults, S3 sending the notification
    # twice, and the uploader's retried PUT (after the first order's message is done; in its batch),
    # the three names that need URL-decoding (idem.explore.families.key_decoding), then the runs and the
    # families of time and accounts (tests/test_check_sqs_world.py; retry_ends needs 2 retries).
    # Its faults: 801 (each message reads, claims, charges and books). Then the second round: the calls a
    # batch's second copy of a message makes with no fault (S3 sending it twice, the retried PUT in the same
    # batch: GetObject #3, PutItem #5...), each failed on its first arrival (idem.explore.families.second_fault)
    assert report.dimensions() == {"faults": 801 + 1, "overwrite": 2, "slow": 0, "late": 9, "retry_ends": 0,
                                   "again": 34, "accounts": 11, "zones": 0, "runs": 38, "uploads": 2, "names": 3,
                                   "second_fault": 15}
    retried = {r.schedule.label(): r for r in report.results if r.schedule.second == "retried_put"
               and r.schedule.overwrite and r.schedule.fault is None}
    assert sorted(retried) == sorted(RETRIED_PUT)
    assert all(r.verdict == "exactly_once" and r.effects["provider:charge"] == 2 for r in retried.values())


def test_pins_bug_an_sqs_handler_keyed_per_upload_double_charges_the_uploaders_retried_put():
    """Keyed by the object's versionId, a redelivered message replays its charge, but the uploader's
    retried PUT of the same order is a new version: a second charge for one order."""
    report = check_handler(target("sqs_upload_keyed"), retries=(0,), trigger="sqs")
    assert not report.holds
    # it guards an order sent again past Stripe's 24-hour key window with Stripe's key alone, so the
    # late and again families charge it twice too (tests/test_check_sqs_world.py); outside them, only
    # the retried PUT breaks: every other schedule holds
    # (the second round adds nothing: each of its breaks is its fault-free schedule's, the same way)
    broken = {r.schedule.label(): r for r in new_breaks(report) if r.schedule.dimension not in ("late", "again")}
    assert all(r.verdict == "double_charge" for r in report.broken if r.schedule.dimension in ("late", "again"))
    assert sorted(broken) == sorted(RETRIED_PUT)
    for result in broken.values():
        assert result.verdict == "double_charge" and result.effects["provider:charge"] == 3
        assert "order-1.json: 2 charges for one order" in result.findings
    assert report.smallest_break().schedule.label() == RETRIED_PUT[0]


def test_keyed_the_handler_to_copy_holds_under_the_sqs_trigger_with_the_uploaders_retried_put():
    schedules = [Schedule(None, delivery, None, 0, overwrite="versioned", second="retried_put")
                 for delivery in ("single", "same_batch")]
    handler = resolve("idem.core.handlers.keyed:lambda_handler")
    _, baseline, _ = discover(handler, (), "make_provider", Books(), "sqs")
    results = run_batch(handler, schedules, baseline, (), "make_provider", 0, Books(), "sqs")
    assert [r.schedule.label() for r in results] == list(RETRIED_PUT)
    assert all(r.verdict == "exactly_once" and r.effects["provider:charge"] == 2 for r in results), \
        [(r.verdict, r.findings) for r in results]


def test_pins_bug_raising_on_one_message_retries_the_batch_and_charges_its_neighbour_again():
    handler = resolve(target("sqs_batch_raises"))
    _, baseline, _ = discover(handler, (), "make_provider", Books(), "sqs")
    second_fails = Schedule(FaultPlan(Boundary("provider:charge", 2, Side.BEFORE), "1"), "single", None, 1)
    (neighbour,) = run_batch(handler, [second_fails], baseline, (), "make_provider", 0, Books(), "sqs")
    assert neighbour.verdict == "double_charge"
    assert "order-1.json: 2 charges for one upload" in neighbour.findings
    # the whole batch, a visibility timeout later (a schedule without a draw: its range's low end,
    # the function's 30 s timeout; idem.explore.families.sqs_timed)
    assert [a.start for a in neighbour.attempts] == [0.0, 30.0]
    assert not check_handler(target("sqs_batch_raises"), retries=(0,), trigger="sqs").holds


def test_pins_bug_reporting_success_for_a_failed_message_is_a_silent_loss():
    report = check_handler(target("sqs_reports_success"), retries=(0,), trigger="sqs")
    smallest = report.smallest("silent_loss")
    assert smallest is not None and not report.holds
    assert "order-1.json: no charge for the upload" in smallest.findings and smallest.dlq == 0


def test_an_s3_fed_handler_under_the_sqs_trigger_fails_its_clean_run_exit_1():
    report = check_handler(target("keyed_books"), retries=(0,), trigger="sqs")
    (clean,) = report.results
    assert clean.clean and not report.holds and "the clean run fails" in clean.findings[0]


# -- verdicts: EventBridge-fed handlers ------------------------------------------------------
def _past_key_window(schedule: str) -> bool:
    """An order sent again past Stripe's 24-hour key window (idem/explore/families/timed.py), or a copy drawn
    from EventBridge's range, which reaches 30 hours (24 of EventBridge's retries, 6 in Lambda's queue)."""
    return ("Stripe's 24-hour key window" in schedule or "(3 days later)" in schedule
            or "a copy of the event at its range's" in schedule)


def test_a_correct_eventbridge_handler_holds():
    report = check_handler(target("eventbridge_keyed"), retries=(0,), trigger="eventbridge")
    # it holds but where the order comes back past Stripe's 24-hour key window (charged first, with
    # Stripe's key as its only guard): the late and again families (idem/explore/families/timed.py)
    assert report.broken and all(_past_key_window(r.schedule.label()) for r in report.broken), report.explain()
    # 131 fault schedules, and the overwrite and slow families s3 has (at one retry setting, 0:
    # 2 buckets x a second order or the retried PUT x after the first or at each of 3 places, and a
    # second order at a name of 1,024 bytes in each bucket; 8 slow: at 4 places, with a copy or alone), and the runs: 3 at each of the
    # 2 calls' request side, 2 at the AWS call's answer side, 1 at the charge's (idem.explore.families.runs)
    families = {kind: sum(1 for r in report.results if kind(r.schedule)) for kind in (
        lambda s: bool(s.overwrite), lambda s: s.slow, lambda s: s.dimension == "runs")}
    added = sum(report.dimensions()[name] for name in timed.DIMENSIONS)  # late, retry_ends, again, accounts
    # and no family names: EventBridge's event carries the key as stored (idem.explore.families.key_decoding)
    assert report.dimensions()["names"] == 0
    # and the family uploads: the order uploaded by POST and by a multipart upload (idem.explore.families.upload_kinds)
    assert report.dimensions()["uploads"] == 2
    assert len(report.results) == 131 + 16 + 2 + 8 + 9 + 2 + added and all(families.values()), families


def test_pins_bug_a_request_id_key_charges_again_when_eventbridge_delivers_a_copy():
    report = check_handler(target("eventbridge_request_id_key"), retries=(0,), trigger="eventbridge")
    smallest = report.smallest_break()
    assert smallest.verdict == "double_charge" and smallest.schedule.fault is None
    assert smallest.schedule.delivery == "duplicate"


# -- the command, its JSON, the fixture --------------------------------------------------------
def test_the_json_report_carries_the_trigger():
    code, out, _ = cli(target("eventbridge_keyed"), "--trigger", "eventbridge", "--retries", "0",
                       "--workers", "1", "--json")
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    assert code == 1 and report["trigger"] == "eventbridge"  # 1: past Stripe's key window, as above
    assert all(_past_key_window(r["schedule"]) for r in report["results"] if r["verdict"] in BREAKS)


def test_an_unknown_trigger_is_bad_input():
    code, _, err = cli(target("sqs_keyed"), "--trigger", "sns")
    assert code == 2 and "invalid choice: 'sns'" in err
    with pytest.raises(CheckInputError, match="choose one of s3, sqs, eventbridge"):
        check_handler(target("sqs_keyed"), trigger="sns")


def test_the_help_names_the_triggers():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["check", "--help"])
    assert "--trigger {s3,sqs,eventbridge}" in out.getvalue()


def test_the_fixture_takes_a_trigger(idem_check):
    # the fixture fails a test on any break: eventbridge_keyed breaks past Stripe's key window (above),
    # so its twin that claims the order first and keeps the first attempt's time is the one given here
    report = idem_check(target("eventbridge_claimed"), trigger="eventbridge", retries=(0,), workers=1)
    assert report.trigger == "eventbridge" and report.holds and not report.broken


def test_eventbridges_envelope_time_is_in_whole_seconds_as_aws_writes_it(monkeypatch):
    """S3's eventTime has milliseconds; EventBridge's envelope `time` does not ("2021-11-12T00:00:00Z",
    ev-events.html). A handler reading it as AWS writes it holds; it failed its clean run when the check
    copied S3's eventTime there."""
    uploaded = LocalWorld().upload("acct/a.json", order_body(1))
    assert (uploaded.event_time, eventbridge_event(uploaded)["time"]) == ("2026-01-01T00:00:00.000Z",
                                                                         "2026-01-01T00:00:00Z")
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "uploads")
    code, out, _ = cli(target("eventbridge_envelope_time"), "--trigger", "eventbridge", "--retries", "0",
                       "--workers", "1")
    assert code == 0, out
