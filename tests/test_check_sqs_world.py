"""Issue 41 under `--trigger sqs` (S3 -> SQS -> Lambda): the check's world is SQS's as documented
(docs/reliability.md, "The SQS trigger's world"; idem/explore/families/sqs_timed.py). The visibility timeout is
drawn from its range (the function's timeout to 12 h) with both ends as schedules, SQS's copy of a
message comes up to its retention period later, a failed message is redriven from the dead-letter
queue a day later, another account sends an order with the same id, and faults come in runs. Each
handler here is sqs_keyed.py with one defect, written as teams write them (tests/handlers/sqs_*.py,
the published fact in each docstring); each breaks only in the family that shows its defect, and the
correct one holds in all of them."""
from __future__ import annotations

import re
from pathlib import Path

from idem.explore.families import timed, timings
from idem.explore.run import triggers
from idem.explore.check import discover
from idem.explore.families.build import sqs_schedules
from idem.explore.families.schedule import Schedule
from idem.explore.judge.books import Books
from idem.explore.run.runner import run_batch
from idem.explore.target.target import resolve
from idem.explore.target.deployed import Deployed
from idem.sim.faults import END, Boundary, Side
from idem.sim.world import LocalWorld

HANDLERS = Path(__file__).parent / "handlers"
TWELVE_HOURS, FOUR_DAYS = 43_200.0, 345_600.0


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def families(name: str, wanted: set[str], retries: tuple[int, ...], faults_at: str = ""):
    """The results of the schedules of `wanted` families only (a cheaper run than the whole check),
    and of the faults family's schedules, delivered once, whose fault is at a call named `faults_at`
    (a single fault there: what the defect is not)."""
    handler = resolve(target(name) if "." not in name else name)
    crossed, baseline, _ = discover(handler, (), "make_provider", Books(), "sqs")
    found = [s for s in sqs_schedules(crossed, retries) if s.dimension in wanted
             or (faults_at and s.dimension == "faults" and s.delivery == "single" and s.fault is not None
                 and s.fault.at.call == faults_at)]
    return run_batch(handler, found, baseline, (), "make_provider", 0, Books(), "sqs")


# -- the ranges --------------------------------------------------------------------------------
def test_the_visibility_timeout_and_sqs_copies_have_their_documented_ranges_and_ends():
    # no shorter than the function's timeout (Lambda refuses it), at most 12 hours (SQS)
    assert timings.visibility_range() == (30.0, TWELVE_HOURS)
    assert timings.visibility_range(900.0) == (900.0, TWELVE_HOURS)
    assert timings.visibility_timeout(timings.LOW_ENDS) == 30.0
    assert timings.visibility_timeout(timings.HIGH_ENDS) == TWELVE_HOURS
    draws = [timings.visibility_timeout(timings.draw(f"shape {n}")) for n in range(100)]
    assert min(draws) < 120.0 and max(draws) > 3600.0 and all(30.0 <= d <= TWELVE_HOURS for d in draws)
    # SQS keeps a message 4 days by default, and may deliver a copy of it until then (S3's lag delays
    # the message and its copies alike: the range is counted from the message's send)
    assert timings.sqs_copy_range() == (0.0, FOUR_DAYS)
    assert timings.sqs_copy_delay(timings.HIGH_ENDS) == FOUR_DAYS


def test_each_schedule_runs_with_its_drawn_visibility_timeout_or_the_templates():
    with LocalWorld(prefix="sqsw") as world:
        env = {**world.env(), "AWS_DEFAULT_REGION": "us-east-1"}
        for timing, want in ((timings.LOW_ENDS, 30.0), (timings.HIGH_ENDS, TWELVE_HOURS)):
            runtime = triggers.sqs_runtime(world, env, Schedule(retries=2, timing=timing), target("sqs_keyed"),
                                           "make_provider")
            assert (runtime.mapping.visibility_timeout, runtime.mapping.max_receive_count) == (want, 3)
        deployed = Deployed("template.yaml, function F", timeout=60, visibility_timeout=400, max_receive_count=5,
                            queue="Uploads")
        runtime = triggers.sqs_runtime(world, env, Schedule(retries=2, timing=timings.HIGH_ENDS), target("sqs_keyed"),
                                       "make_provider", deployed=deployed)
        # as deployed: the queue's own, whatever the schedule's draw (maxReceiveCount 5 runs as retries 2)
        assert (runtime.mapping.visibility_timeout, runtime.mapping.max_receive_count) == (400.0, 5)
        # a template with no SQS source: the check's own queue, drawn from the template's timeout up
        no_queue = Deployed("template.yaml, function F", timeout=60)
        runtime = triggers.sqs_runtime(world, env, Schedule(retries=0, timing=timings.LOW_ENDS), target("sqs_keyed"),
                                       "make_provider", deployed=no_queue)
        assert runtime.mapping.visibility_timeout == 60.0


def test_every_family_is_explored_under_sqs_each_schedule_named():
    get, put, charge = Boundary("s3:GetObject"), Boundary("dynamodb:PutItem"), Boundary("provider:charge")
    crossed = [get, Boundary("s3:GetObject", side=Side.AFTER), put, Boundary("dynamodb:PutItem", side=Side.AFTER),
               charge, Boundary("provider:charge", side=Side.AFTER), END]
    found = sqs_schedules(crossed, (0, 1, 2))
    assert {"faults", "overwrite", "runs", *timed.DIMENSIONS} <= {s.dimension for s in found}
    ends = [s for s in found if s.dimension == "retry_ends"]
    assert {(s.fault.at, s.timing) for s in ends} == {(b, t) for b in crossed
                                                      for t in (timings.LOW_ENDS, timings.HIGH_ENDS)}
    late = [s for s in found if s.dimension == "late"]
    assert {s.later.seconds for s in late if s.later.seconds} == {121.0, 901.0, 86_401.0, 3 * 86_400.0}
    assert {s.later.how for s in found if s.dimension == "accounts"} == {"after", "same_batch", "concurrent"}
    assert all(s.timing is not None for s in found if s.later is None)  # every other delay drawn
    labels = [s.label() for s in found]
    assert len(labels) == len(set(labels)), "each schedule reads differently"
    assert any("SQS delivers each message of the batch again" in label for label in labels)
    assert any("visibility timeout at its range's high end (12 h)" in label for label in labels)


# -- handlers: the correct one holds, each defect breaks only where its family shows it -----------
def test_the_correct_sqs_handler_holds_when_its_retries_come_at_both_ends_and_after_a_redrive():
    results = families("sqs_keyed", {"retry_ends", "again"}, (2,))
    assert results and not [(r.schedule.label(), r.verdict, r.findings) for r in results if r.breaks]
    high = [r for r in results if r.schedule.dimension == "retry_ends" and r.schedule.timing == timings.HIGH_ENDS
            and r.schedule.fault.at == Boundary("provider:charge", side=Side.AFTER)]
    # charged, never booked, and its third receive 24 h later: left to a person, never charged again
    assert [(r.verdict, r.effects["provider:charge"]) for r in high] == [("needs_attention", 2)]


def test_the_handler_to_copy_holds_under_sqs_in_the_families_of_time_and_accounts():
    results = families("idem.core.handlers.keyed:lambda_handler", {"late", "accounts", "again"}, (0,))
    assert {r.schedule.dimension for r in results} == {"late", "accounts", "again"}
    assert not [(r.schedule.label(), r.verdict, r.findings) for r in results if r.breaks]


def test_pins_bug_an_sqs_key_of_the_order_id_alone_loses_another_accounts_order():
    # every family but the exhaustive faults (one account each: the key's defect cannot show there)
    results = families("sqs_order_id_only", set(timed.DIMENSIONS) | {"runs", "overwrite"}, (0,))
    broken = [r for r in results if r.breaks]
    assert {r.schedule.dimension for r in broken} == {"accounts"}
    assert {r.schedule.later.how for r in broken} == {"after", "same_batch", "concurrent"}
    after = next(r for r in broken if r.schedule.later.how == "after")
    assert after.verdict == "silent_loss"
    # named by its whole key: both accounts' files are "order-1.json"
    assert [re.sub(r"\d{5}", "N", f) for f in after.findings] == ["otherN/order-1.json: no charge for the order"]


def test_pins_bug_an_sqs_retry_helper_that_gives_up_leaves_a_charge_with_no_books_only_in_runs():
    # every family but the exhaustive faults, and those faults at its booking call (a single throttle)
    results = families("sqs_retry_helper", set(timed.DIMENSIONS) | {"runs", "overwrite"}, (0,), "dynamodb:UpdateItem")
    assert {r.schedule.dimension for r in results} == {"runs", "overwrite", "faults", *timed.DIMENSIONS} - {"retry_ends"}
    broken = [r for r in results if r.breaks]
    assert {r.schedule.dimension for r in broken} == {"runs"}
    assert all(r.verdict == "silent_mismatch" and r.schedule.fault.run >= 3 for r in broken)


def test_pins_bug_an_sqs_dedup_record_of_15_minutes_charges_again_when_the_order_comes_back_days_later():
    results = families("sqs_dedup_15_minutes", set(timed.DIMENSIONS) | {"runs", "overwrite"}, (0,))
    broken = {r.schedule.dimension for r in results if r.breaks}
    assert broken == {"late", "again"}
    late = [r for r in results if r.breaks and r.schedule.dimension == "late"]
    assert all(r.verdict == "double_charge" for r in late)
    # past Stripe's 24-hour key window only: a copy 15 minutes or a day's first minutes later replays the key
    assert not any(r.breaks for r in results if r.schedule.dimension == "late"
                   and r.schedule.later.seconds in (121.0, 901.0))
    assert any(r.breaks for r in late if r.schedule.timing == timings.HIGH_ENDS)  # SQS's copy 4 days later


def test_pins_bug_without_the_23_hour_rule_a_redrive_or_a_12_hour_visibility_timeout_charges_twice():
    """The handler charges again under a key Stripe may have pruned: after a redrive a day later, and
    when its third receive comes 24 h after the first (the high ends), not at the low ends; a late
    copy of a booked order does nothing (its books say so)."""
    results = families("sqs_no_key_window", {"again", "retry_ends", "late"}, (2,))
    broken = [r for r in results if r.breaks]
    assert {r.schedule.dimension for r in broken} == {"again", "retry_ends"}
    assert all(r.verdict == "double_charge" for r in broken)
    assert all(r.schedule.timing == timings.HIGH_ENDS for r in broken if r.schedule.dimension == "retry_ends")


def test_an_again_schedule_whose_failing_call_was_got_past_inside_each_attempt_says_so():
    """sqs_retry_helper tries a throttled booking again itself: a throttle on every receive fails no
    attempt, so nothing reached the dead-letter queue before the redrive, and the report says that
    rather than "then the dead-letter queue redriven" alone (timed.result_label)."""
    results = {r.schedule.fault.at: r for r in families("sqs_retry_helper", {"again"}, (0,))
               if r.schedule.later.how == "redrive"}
    absorbed = results[Boundary("dynamodb:UpdateItem")]
    assert not any(a.failed for a in absorbed.attempts) and absorbed.verdict == "exactly_once"
    assert timed.result_label(absorbed) == (
        "exception before dynamodb:UpdateItem on arrival 1; no attempt failed (the failing call was tried again "
        "inside each attempt and answered), so the failure queue held nothing; the dead-letter queue redriven "
        "to the source queue 1 d 1 s later (past Stripe's 24-hour key window); 0 retries")
    failed = results[Boundary("provider:charge")]  # the charge call is not tried again: the label as scheduled
    assert timed.result_label(failed) == failed.schedule.label()
    assert "then the dead-letter queue redriven to the source queue 1 d 1 s later" in failed.schedule.label()


# -- speed: what the check writes on the operator's side goes straight to moto's backend -----------
def test_a_customer_link_put_in_the_backend_keeps_the_update_items_condition_and_other_attributes():
    with LocalWorld(prefix="pib", provider_in_memory=True) as world:  # a check's world (provider in memory)
        table, key = world.ledger_table, {"pk": {"S": "account#a"}}
        world.dynamodb.put_item(TableName=table, Item={**key, "note": {"S": "kept"}})
        world.put_in_backend(table, {**key, "customer": {"S": "cus_1"}}, unless="customer")
        world.put_in_backend(table, {**key, "customer": {"S": "cus_2"}}, unless="customer")  # linked already
        assert world.dynamodb.get_item(TableName=table, Key=key)["Item"] == {**key, "note": {"S": "kept"},
                                                                            "customer": {"S": "cus_1"}}
        world.upload("zed/order.json", b'{"order_id": "1"}')  # the demo account link, as onboarding makes it
        linked = world.dynamodb.get_item(TableName=table, Key={"pk": {"S": "account#zed"}})["Item"]
        assert (linked["customer"], linked["kind"]) == ({"S": "zed"}, {"S": "customer"})
