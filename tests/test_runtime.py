"""The local Lambda runtime: retries, destinations, containers, timeouts, event age."""
from __future__ import annotations

import pytest

from idem.sim.faults import FaultPlan
from idem.sim.runtime import LocalLambda


def run(world, mode="naive", fault=None, **options):
    runtime = LocalLambda(world, world.env(mode), fault=fault, **options)
    runtime.send(world.event(world.upload("alice/order.csv")))
    return runtime, runtime.run()


def test_retries_come_about_60_then_120_seconds_after_each_failure(world):
    _, attempts = run(world, fault=FaultPlan.at_point("at_charge", "always"))
    assert [(a.attempt, a.start, a.outcome) for a in attempts] == [
        (1, 0.0, "error"), (2, 60.0, "error"), (3, 180.0, "error")]
    assert len({a.request_id for a in attempts}) == 1  # a retry is the same invocation


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_maximum_retry_attempts_bounds_the_attempts(world, retries):
    _, attempts = run(world, fault=FaultPlan.at_point("at_charge", "always"), retries=retries)
    assert len(attempts) == 1 + retries
    assert world.failure_queue_depth() == 1


def test_the_destination_receives_lambdas_invocation_record(world):
    _, attempts = run(world, fault=FaultPlan.at_point("at_charge", "always"))
    (record,) = world.failure_queue()
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestContext"]["requestId"] == attempts[0].request_id
    assert record["requestPayload"]["Records"][0]["s3"]["object"]["key"] == "alice/order.csv"
    assert record["responsePayload"]["errorType"] == "InjectedFault"
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["timestamp"] == "2026-01-01T00:03:00.000Z"


def test_a_success_sends_nothing_to_the_destination(world):
    _, attempts = run(world)
    assert [a.outcome for a in attempts] == ["ok"] and world.failure_queue_depth() == 0


def test_warm_containers_are_reused_and_cold_ones_start_empty(world):
    runtime, attempts = run(world, fault=FaultPlan.at_point("at_charge", "once"))
    assert [(a.container, a.cold) for a in attempts] == [("c1", True), ("c1", False)]
    runtime, attempts = run(world, fault=FaultPlan.at_point("at_charge", "always"), reuse_containers=False)
    assert [(a.container, a.cold) for a in attempts] == [("c1", True), ("c2", True), ("c3", True)]


def test_module_globals_survive_only_in_a_warm_container(world):
    plan = FaultPlan.at_point("after_charge", "always")
    warm, _ = run(world, fault=plan)
    assert len(warm.containers) == 1  # all three attempts used the App built at cold start
    with type(world)(prefix="cold") as other:
        cold, _ = run(other, fault=plan, reuse_containers=False)
    apps = [c.module._app for c in cold.containers]
    assert len(apps) == 3 and len({id(app) for app in apps}) == 3  # each cold start built its own


def test_a_crash_is_retried_and_its_container_is_not_reused(world):
    _, attempts = run(world, "keyed", FaultPlan.at_point("at_charge", "once", how="crash"))
    assert [a.outcome for a in attempts] == ["crash", "ok"]
    assert attempts[0].error.startswith("Runtime.ExitError")
    assert attempts[1].cold and attempts[1].container == "c2"


def test_the_context_reports_the_time_left_on_the_virtual_clock(world):
    seen = []
    runtime = LocalLambda(world, world.env("keyed"), timeout=30)
    runtime.during("before_charge", lambda: (world.clock.advance(12), seen.append(world.clock.t)))
    runtime.send(world.event(world.upload("alice/o.csv")))
    runtime.run()
    record = world.ledger().records()[0]
    assert record.lease_until == world.clock.start + 30  # the lease ends at the deadline
    assert seen == [12.0]


def test_an_invocation_past_its_deadline_times_out(world):
    runtime = LocalLambda(world, world.env("naive"), timeout=30)
    runtime.during("charged", lambda: world.clock.advance(31))
    runtime.send(world.event(world.upload("alice/o.csv")))
    attempts = runtime.run()
    assert attempts[0].outcome == "timeout" and "Task timed out after 30.00 seconds" in attempts[0].error
    assert [a.outcome for a in attempts] == ["timeout", "ok"]  # a timeout is retried like an error
    assert len(world.provider().charges()) == 2


def test_an_invocation_that_ran_past_its_deadline_is_retried_in_a_fresh_environment(world):
    # Lambda resets the execution environment after an invocation times out: the retry starts
    # cold (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html)
    runtime = LocalLambda(world, world.env("naive"), timeout=30)
    runtime.during("charged", lambda: world.clock.advance(31))
    runtime.send(world.event(world.upload("alice/o.csv")))
    first, retry = runtime.run()
    assert first.outcome == "timeout" and first.container == "c1"
    assert retry.cold and retry.container == "c2"  # was a warm start on c1


def test_events_older_than_the_maximum_age_are_dropped_to_the_destination(world):
    runtime = LocalLambda(world, world.env("naive"), fault=FaultPlan.at_point("at_charge", "always"),
                          max_event_age=90)
    runtime.send(world.event(world.upload("alice/o.csv")))
    attempts = runtime.run()
    assert len(attempts) == 2  # the retry at +180 s would be older than 90 s
    (record,) = world.failure_queue()
    assert record["requestContext"]["condition"] == "EventAgeExceeded"


def test_a_concurrent_copy_runs_in_its_own_container_mid_invocation(world):
    runtime = LocalLambda(world, world.env("naive"))
    event = world.event(world.upload("alice/o.csv"))
    runtime.during("before_charge", lambda: runtime.send_now(event))
    runtime.send(event)
    attempts = runtime.run()
    assert [(a.delivery, a.container) for a in attempts] == [(1, "c1"), (2, "c2")]
    assert attempts[1].end <= attempts[0].end and "charged" in dict(map(reversed, attempts[0].steps))


@pytest.mark.parametrize("kwargs", [{"retries": 3}, {"max_event_age": 30}])
def test_settings_outside_lambdas_ranges_are_refused(world, kwargs):
    with pytest.raises(ValueError):
        LocalLambda(world, world.env(), **kwargs)


def test_the_failure_queue_reads_back_every_message_and_keeps_them(world):
    for n in range(25):
        world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=f'{{"n": {n}}}')
    assert sorted(m["n"] for m in world.failure_queue()) == list(range(25))
    assert len(world.failure_queue()) == 25 and world.failure_queue_depth() == 25


def test_each_invocation_gets_its_own_copy_of_the_event_sharing_nothing_as_lambda_reads_json():
    from idem.sim.runtime.local_lambda import as_delivered

    shared = {"s3": {"object": {"key": "alice/a.json", "size": 7}}}
    event = {"Records": [shared, shared], "n": [1, 2.5, True, None], "odd": ("t", [1])}
    copied = as_delivered(event)
    assert copied == event
    copied["Records"][0]["s3"]["object"]["key"] = "changed"  # the handler changes its own event only
    assert shared["s3"]["object"]["key"] == "alice/a.json" and copied["Records"][1]["s3"]["object"]["key"] == "alice/a.json"
    assert copied["odd"] == ("t", [1]) and copied["odd"][1] is not event["odd"][1]  # not JSON: deep-copied
