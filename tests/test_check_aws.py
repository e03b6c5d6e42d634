"""The check's schedules are true to AWS (#29): each upload carries its own S3 request, names reach
S3's limits, an uploader's retried PUT is judged by order (docs/one_charge_per_order.md), a second order can land
between two attempts, S3's duplicate delivery under SQS is two messages, a crash is a kill, calls
from the handler's threads are its boundaries, and the clean run is judged too. Each handler in
tests/handlers/ gets the verdict a correct checker must give."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote_plus

import pytest

from idem.explore.run import triggers
from idem.explore.check import check_handler, discover
from idem.explore.families.schedule import Schedule
from idem.explore.judge.books import Books
from idem.explore.run.runner import order_body, run_batch
from idem.explore.target.target import resolve
from idem.sim.sdk_retries import EVERY
from idem.sim.faults import Boundary, FaultPlan, Side
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

HANDLERS = Path(__file__).parent / "handlers"
ONE = dict(retries=(0,), workers=1, versioning=("versioned",))
RETRY = dict(retries=(1,), workers=1, versioning=("versioned",))


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def broken_by(report, **fields):
    """The broken results whose schedule has each of `fields` (e.g. second="retried_put")."""
    return [r for r in report.broken if all(getattr(r.schedule, k) == v for k, v in fields.items())]


#: The families the merged money contract added where a handler guarded past Stripe's 24-hour key
#: window by Stripe's key alone charges twice (idem/explore/families/timed.py; test_check_handlers' MERGED_CONTRACT).
KEY_WINDOW = {"late": "double_charge", "again": "double_charge"}


def broken_within_the_key_window(report):
    """The broken results but those a redrive or a second upload past Stripe's key window explains (a
    late or again schedule built on a second order keeps its `second`, so broken_by alone counts them)."""
    return [r for r in report.broken if KEY_WINDOW.get(r.schedule.dimension) != r.verdict]


# -- events as S3 sends them ---------------------------------------------------------------------
def test_each_put_carries_its_own_request_and_every_copy_of_its_event_the_same():
    with LocalWorld(prefix="reqs", provider_in_memory=True) as world:
        name = triggers.object_name(1)
        first, again = world.upload(name, order_body(1)), world.upload(name, order_body(1))
        events = [triggers.event_for("s3", world, o) for o in (first, again)]
        made = [e["Records"][0]["responseElements"] for e in events]
        assert made[0]["x-amz-request-id"] != made[1]["x-amz-request-id"]
        assert made[0]["x-amz-id-2"] != made[1]["x-amz-id-2"] and len(made[0]["x-amz-id-2"]) == 76
        objects = [e["Records"][0]["s3"]["object"] for e in events]
        assert objects[0]["eTag"] == objects[1]["eTag"]  # the same bytes: the same eTag
        assert objects[0]["sequencer"] != objects[1]["sequencer"]
        assert objects[0]["versionId"] != objects[1]["versionId"]
        assert triggers.event_for("s3", world, first) == events[0]  # a redelivery is the same event
        bridged = [triggers.event_for("eventbridge", world, o)["detail"]["request-id"] for o in (first, again)]
        assert bridged == [m["x-amz-request-id"] for m in made]


@pytest.mark.parametrize("versioned", [False, True])
def test_an_upload_over_a_tagged_object_has_no_tags_as_a_put_object_makes_it(versioned):
    """A PutObject with no x-amz-tagging makes an object with no tags
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html, `x-amz-tagging`); the check's
    uploads go straight into moto's backend, whose put kept the replaced object's tags in an unversioned
    bucket: a handler's "charged" tag then looked set on a second order it never charged."""
    with LocalWorld(prefix="tags", versioned=versioned, provider_in_memory=True) as world:
        name = triggers.object_name(1)
        world.upload(name, order_body(1))
        world.s3.put_object_tagging(Bucket=world.bucket, Key=name, Tagging={"TagSet": [{"Key": "charged", "Value": "1"}]})
        second = world.upload(name, order_body(1, 2))
        read = {"VersionId": second.version_id} if versioned else {}
        assert world.s3.get_object_tagging(Bucket=world.bucket, Key=name, **read)["TagSet"] == []


def test_names_reach_s3s_limit_and_arrive_url_encoded():
    longest = triggers.object_name(7, longest=True)
    assert len(longest.encode("utf-8")) == triggers.MAX_NAME_BYTES == 1024
    # the check's own names are plain (the names family tries spaces, '+' and non-ASCII on their
    # own: tests/test_check_key_names.py); a name that needs encoding arrives encoded
    spaced = "check00007/order 1 \u00e9.json"
    with LocalWorld(prefix="names", provider_in_memory=True) as world:
        keys = [triggers.event_for("s3", world, world.upload(name, order_body(7)))["Records"][0]["s3"]["object"]["key"]
                for name in (longest, spaced)]
    assert keys[0] == quote_plus(longest, safe="/")
    assert keys[1] == quote_plus(spaced, safe="/") and "+" in keys[1] and "%C3%A9" in keys[1]


# -- one charge per ORDER ------------------------------------------------------------------------
def test_pins_bug_a_key_per_upload_charges_the_uploaders_retried_put_twice():
    report = check_handler(target("keyed_per_upload"), **ONE)
    within = broken_within_the_key_window(report)
    assert within and within == broken_by(report, second="retried_put"), report.explain()
    assert all("order 1: 2 charges for one order" in r.findings for r in within)


def test_a_key_per_order_holds_through_retried_puts_and_second_orders():
    report = check_handler(target("keyed_books"), **RETRY)
    assert report.holds, report.explain()
    kinds = {(r.schedule.second, r.schedule.delivery) for r in report.results if r.schedule.overwrite}
    assert {("retried_put", "duplicate"), ("order", "concurrent"), ("order", "between"),
            ("retried_put", "between")} <= kinds


def test_a_request_id_key_gives_each_order_its_charge_and_breaks_only_on_the_retried_put():
    report = check_handler(target("request_id_key"), **ONE)
    within = broken_within_the_key_window(report)
    assert within and within == broken_by(report, second="retried_put"), report.explain()  # no false break on a second order
    assert any(r.schedule.second == "order" for r in report.results if r.schedule.overwrite)


def test_pins_bug_a_key_cut_to_255_characters_loses_the_second_order_at_a_long_name():
    cut = check_handler(target("truncated_key"), **ONE)
    lost = [r for r in broken_within_the_key_window(cut) if r.schedule.second == "order"]
    assert lost and all(r.verdict == "silent_loss" and r.schedule.long_name for r in lost)
    assert "order 2: no charge for the order" in lost[0].findings
    hashed = check_handler(target("keyed_per_upload"), **ONE)  # the same key, hashed
    assert not [r for r in broken_within_the_key_window(hashed) if r.schedule.second == "order"]
    assert any(r.schedule.long_name for r in hashed.results)


def test_pins_bug_a_retry_that_reads_the_latest_version_charges_the_wrong_order():
    report = check_handler(target("rereads_latest"), **RETRY)
    assert broken_by(report, delivery="between", second="order"), report.tally()


def test_pins_bug_a_key_by_sqs_message_id_charges_s3s_duplicate_delivery_twice():
    report = check_handler(target("sqs_message_id_key"), retries=(0,), workers=1, trigger="sqs")
    (twice,) = [r for r in report.results if r.schedule.sent_twice and r.schedule.fault is None]
    assert twice.verdict == "double_charge" and twice.breaks
    # SQS's own redelivery keeps the id; the uploader's retried PUT is a new message (a new id) too.
    # Past them, only where an order comes back past Stripe's 24-hour key window (a copy days later,
    # a redrive or the order uploaded again: tests/test_check_sqs_world.py), guarded by Stripe's key alone
    outside = [r for r in report.broken if r.schedule.dimension not in ("late", "again")]
    assert all(r.schedule.sent_twice or r.schedule.second == "retried_put" for r in outside)
    assert all(r.verdict == "double_charge" for r in report.broken if r not in outside)


# -- a crash is a kill ---------------------------------------------------------------------------
FINALLY = '''
import atexit, os, boto3

def lambda_handler(event, context):
    dynamodb = boto3.client("dynamodb")
    atexit.register(lambda: open(os.environ["MARK"], "w").write("atexit ran"))
    try:
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": "lock"}})
    finally:
        dynamodb.delete_item(TableName=os.environ["LEDGER_TABLE"], Key={"pk": {"S": "lock"}})
    return "ok"
'''


def test_a_crash_runs_no_finally_and_no_atexit_of_the_handler(tmp_path):
    (tmp_path / "locks.py").write_text(FINALLY)
    with LocalWorld(prefix="kill") as world:
        crash = FaultPlan(Boundary("dynamodb:PutItem", 1, Side.AFTER), "1", "crash")
        runtime = LocalLambda(world, world.env(MARK=str(tmp_path / "mark")), fault=crash, retries=0,
                              handler=f"{tmp_path / 'locks.py'}:lambda_handler")
        runtime.send({"Records": []})
        (attempt,) = runtime.run()
        left = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": "lock"}})
    assert attempt.outcome == "crash" and "Item" in left  # the lock a killed process leaves behind
    assert all(c.module is None for c in runtime.containers)  # the container is gone
    assert not (tmp_path / "mark").exists()


def one_schedule(name: str, schedule: Schedule):
    """One schedule of the check, run as the check runs it (after its clean run)."""
    handler = resolve(target(name))
    _, baseline, _ = discover(handler, (), "make_provider", Books())
    (result,) = run_batch(handler, [schedule], baseline, (), "make_provider", 0, Books())
    return result


def test_pins_bug_a_lock_released_in_finally_stays_behind_when_the_process_is_killed():
    crash = FaultPlan(Boundary("provider:charge", 1, Side.AFTER), "1", "crash")
    killed = one_schedule("lock_in_finally", Schedule(crash, "single", None, 1))
    assert killed.verdict == "silent_mismatch", killed.findings  # the retry finds the lock: skipped
    assert [a.outcome for a in killed.attempts] == ["crash", "ok"]
    assert "a charge with no ledger line" in killed.findings


# -- calls from the handler's threads --------------------------------------------------------------
def test_a_handler_that_charges_in_a_thread_pool_holds_and_its_calls_are_boundaries():
    report = check_handler(target("threaded_pool"), **ONE)
    assert report.holds, report.explain()
    assert "before provider:charge" in map(str, report.boundaries)
    assert report.baseline["provider:charge"] == 1  # booked against this upload, from a worker thread


# -- judged against the clean run ------------------------------------------------------------------
def test_pins_bug_books_that_disagree_with_the_money_on_a_clean_run_break():
    report = check_handler(target("double_booked"), **ONE)
    (clean,) = report.results
    assert not report.holds and clean.clean and clean.verdict == "silent_mismatch"
    assert "booked 2 ledger lines for 1 charge" in clean.findings[0]
    assert report.to_json()["exit_code"] == 1 and "the clean run" in report.explain()


def test_pins_bug_skipping_a_busy_installment_is_fewer_charges_than_the_clean_run():
    report = check_handler(target("busy_skips_installment"), **ONE)
    assert report.baseline["provider:charge"] == 2
    smallest = report.smallest("silent_mismatch")
    assert smallest is not None and "1 charge for the upload where the clean run made 2" in smallest.findings
    at_second = {r.schedule.fault.at.nth for r in report.broken if r.schedule.fault and r.schedule.fault.outcome}
    assert 2 in at_second  # the provider's answers reach every provider call, not only the first


# -- time that moves -----------------------------------------------------------------------------
UUIDS = '''
import time, uuid

def lambda_handler(event, context):
    before = time.time()
    time.sleep(7)
    return {"ids": [str(uuid.uuid1()) for _ in range(2000)], "slept": time.time() - before}
'''


def test_sleep_moves_the_virtual_clock_and_uuid1_never_repeats(tmp_path):
    (tmp_path / "ids.py").write_text(UUIDS)
    with LocalWorld(prefix="ids") as world:
        runtime = LocalLambda(world, world.env(), retries=0, handler=f"{tmp_path / 'ids.py'}:lambda_handler")
        runtime.send({"Records": []})
        runtime.send({"Records": [], "again": 1})
        first, second = runtime.run()
    ids = first.result["ids"] + second.result["ids"]
    assert len(set(ids)) == len(ids) == 4000
    assert first.result["slept"] == second.result["slept"] == 7  # virtual seconds, none of them real
    assert second.start == 0.0 and second.end == 7.0  # it ran while the first one slept: they interleave


def test_a_wait_on_a_lock_ends_at_the_functions_timeout_and_the_retry_finishes():
    # a copy starts while the first invocation holds the lock, and waits for it: the first is
    # paused, so the copy's wait ends at the function's timeout; Lambda retries it 60 s later
    locked = Boundary("dynamodb:PutItem", 1, Side.AFTER)
    waited = one_schedule("waits_for_lock", Schedule(None, "concurrent", locked, 1))
    assert waited.verdict == "exactly_once", waited.findings
    assert [(a.delivery, a.outcome) for a in waited.attempts] == [(1, "ok"), (2, "timeout"), (2, "ok")]
    assert waited.attempts[1].error == "Sandbox.Timedout: Task timed out after 30.00 seconds"


def test_the_same_check_twice_gives_the_same_counts():
    first = check_handler(target("threaded_pool"), **ONE)
    again = check_handler(target("threaded_pool"), **ONE)
    assert first.tally() == again.tally() and len(first.results) == len(again.results)


# -- faults AWS really raises -----------------------------------------------------------------------
CATCHES = '''
import os, boto3
from botocore.exceptions import ClientError, ReadTimeoutError

def lambda_handler(event, context):
    dynamodb = boto3.client("dynamodb")
    try:
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": "x"}})
    except ClientError as error:
        return {"caught": error.response["Error"]["Code"]}
    except ReadTimeoutError as error:
        return {"caught": "ReadTimeoutError"}
    return {"caught": None}
'''


@pytest.mark.parametrize("side, run, caught", [(Side.BEFORE, 1, "ProvisionedThroughputExceededException"),
                                               (Side.AFTER, EVERY, "ReadTimeoutError"),
                                               (Side.AFTER, 1, None)])  # botocore resent it: the put's own answer
def test_an_injected_aws_fault_is_what_botocore_raises_there(tmp_path, side, run, caught):
    (tmp_path / "catches.py").write_text(CATCHES)
    with LocalWorld(prefix="botofaults") as world:
        fault = FaultPlan(Boundary("dynamodb:PutItem", 1, side), "1", run=run)
        runtime = LocalLambda(world, world.env(), fault=fault, retries=0,
                              handler=f"{tmp_path / 'catches.py'}:lambda_handler")
        runtime.send({"Records": []})
        (attempt,) = runtime.run()
    assert attempt.outcome == "ok" and attempt.result == {"caught": caught}


TIMES_A_THROTTLE = '''
import os, boto3
from botocore.exceptions import ClientError

def lambda_handler(event, context):
    before = context.get_remaining_time_in_millis()
    try:
        boto3.client("dynamodb").put_item(TableName=os.environ["LEDGER_TABLE"], Item={"pk": {"S": "x"}})
    except ClientError:
        pass
    return {"spent_ms": before - context.get_remaining_time_in_millis()}
'''


def test_pins_gap_botocores_backoff_before_a_throttle_reaches_the_handler_is_not_slept(tmp_path):
    # AWS: boto3's default (legacy) retry mode makes 10 attempts at DynamoDB, sleeping 0.05 s doubled
    # each time (botocore/data/_retry.json): about 25.6 s go by before the handler hears of a throttle.
    # The check raises the throttle at once (docs/reliability.md, "Not modelled"): no time is spent.
    (tmp_path / "times.py").write_text(TIMES_A_THROTTLE)
    with LocalWorld(prefix="backoff") as world:
        fault = FaultPlan(Boundary("dynamodb:PutItem", 1, Side.BEFORE), "1")
        runtime = LocalLambda(world, world.env(), fault=fault, retries=0, handler=f"{tmp_path / 'times.py'}:lambda_handler")
        runtime.send({"Records": []})
        (attempt,) = runtime.run()
    assert attempt.outcome == "ok" and attempt.result == {"spent_ms": 0}


def test_pins_bug_a_swallowed_throttle_leaves_a_charge_with_no_ledger_line():
    throttled = FaultPlan(Boundary("dynamodb:PutItem", 1, Side.BEFORE), "1")
    result = one_schedule("swallows_client_error", Schedule(throttled, "single", None, 0))
    assert result.verdict == "silent_mismatch" and "a charge with no ledger line" in result.findings
    assert result.attempts[0].result["body"] == '{"error": "ProvisionedThroughputExceededException"}'
