"""The schedules that reach the bugs teams write: two uploads of one name in one schedule, and time
passing inside an invocation (a slow call with a copy of the event arriving while it is in flight).
Both families are bounded (no fault is added to them): these tests show the bound still reaches
each bug class, and that the faults alone do not."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from idem.explore.check import check_handler
from idem.explore.judge.verdicts import judge_uploads
from idem.sim.faults import CHARGE_CALL, Boundary, Side
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

HANDLERS = Path(__file__).parent / "handlers"
#: the families that send an order again past Stripe's 24-hour key window (idem/explore/families/timed.py): a
#: handler whose only guard is Stripe's key charges again there, whatever else it gets right
PAST_KEY_WINDOW = {"late", "again"}


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


@pytest.mark.parametrize("retries", [(0,), (2,)])
def test_pins_bug_a_key_from_the_name_only_never_charges_the_second_upload(retries):
    report = check_handler(target("name_only_key"), retries=retries, workers=1)
    broken = {r.schedule.dimension for r in report.broken}
    # only a second upload of the same name shows it (a key with nothing but Stripe's behind it breaks
    # past Stripe's 24-hour key window too: the late and again families, tests/test_check_timings.py)
    assert broken - PAST_KEY_WINDOW == {"overwrite"}
    for kind in ("versioned", "unversioned"):  # a new version, or a new eTag and sequencer
        found = [r for r in report.broken if r.schedule.overwrite == kind]
        assert found and all(r.verdict == "silent_loss" for r in found)
        assert any("order 2: no charge for the order" in r.findings for r in found)
    later = [r for r in report.broken if r.schedule.delivery == "duplicate"]  # a second order, later
    assert later and later[0].effects["provider:charge"] == 1


@pytest.mark.parametrize("retries", [(0,), (2,)])
def test_pins_bug_a_lease_shorter_than_the_work_books_one_charge_twice(retries):
    report = check_handler(target("short_lease"), retries=retries, workers=1)
    # instantaneous calls cannot show it (past Stripe's key window it breaks too: PAST_KEY_WINDOW)
    assert {r.schedule.dimension for r in report.broken} - PAST_KEY_WINDOW == {"slow"}
    smallest = min((r for r in report.broken if r.schedule.dimension == "slow"), key=lambda r: r.schedule.size)
    assert smallest.verdict == "silent_mismatch" and "a ledger line with no charge" in smallest.findings
    assert smallest.effects == {"provider:charge": 1, "books:line": 2}
    assert any(a.start >= 28 for a in smallest.attempts)  # the copy came while the call was in flight


def test_a_lease_as_long_as_the_invocation_holds():
    report = check_handler(target("short_lease"), env={"LEASE_SECONDS": "60"}, retries=(0,), workers=1)
    assert not {r.schedule.dimension for r in report.broken} - PAST_KEY_WINDOW, report.explain()
    assert report.dimensions()["slow"] > 0
    # what still breaks: the order sent again after Stripe pruned its key (keyed by Stripe's key alone)
    assert all(r.schedule.later.seconds > 86_400 for r in report.broken)


CLOCKS = """
import datetime, json, time

def make_provider():
    raise RuntimeError("the check replaces this")

def lambda_handler(event, context):
    provider = make_provider()
    read = lambda: [time.time(), time.monotonic(), datetime.datetime.now().timestamp(),
                    context.get_remaining_time_in_millis()]
    print(json.dumps(read()))
    provider.charge(customer="c", amount=100, currency="usd", reference="r", idempotency_key="k")
    print(json.dumps(read()))
"""


def test_every_clock_moves_with_a_slow_call(tmp_path):
    """time.time, time.monotonic, datetime.now and the context's remaining time: one clock, and it
    moves while a call is in flight (until 1 s before the deadline)."""
    handler = tmp_path / "clocks.py"
    handler.write_text(CLOCKS)
    with LocalWorld(prefix="clocks") as world:
        runtime = LocalLambda(world, world.env(), handler=f"{handler}:lambda_handler", timeout=30.0)
        runtime.during(Boundary(CHARGE_CALL, 1, Side.BEFORE), lambda: None, in_flight=True)
        runtime.send(world.event(world.upload("clocks/order.csv")))
        (attempt,) = runtime.run()
    before, after = (json.loads(line) for line in attempt.logs)
    assert [b - a for a, b in zip(before[:3], after[:3])] == pytest.approx([29.0] * 3)
    assert (before[3], after[3]) == (30_000, 1_000)
    assert attempt.outcome == "ok" and attempt.end == 29.0


def test_a_request_in_flight_holds_its_key_at_the_provider():
    """Stripe answers 409 to a request whose key is in flight: a copy's charge during the first
    invocation's slow charge fails, and the first one's charge goes through."""
    report = check_handler(target("keyed_books"), retries=(0,), workers=1)
    (slow,) = [r for r in report.results if r.schedule.slow and r.schedule.copy_at == Boundary(CHARGE_CALL)
               and r.schedule.delivery == "concurrent"]
    assert [a.outcome for a in slow.attempts] == ["ok", "error"]
    assert "409" in slow.attempts[1].error
    assert slow.effects["provider:charge"] == 1 and slow.verdict == "needs_attention"


@pytest.mark.parametrize("per_upload, whole, dlqs, verdict, finding", [
    ([{"provider:charge": 2}, {"provider:charge": 0}], {"provider:charge": 2, "books:line": 2}, [0, 0],
     "double_charge", "upload 1: 2 charges for one upload"),
    ([{"provider:charge": 1}, {"provider:charge": 0}], {"provider:charge": 1, "books:line": 1}, [0, 0],
     "silent_loss", "upload 2: no charge for the upload"),
    ([{"provider:charge": 1}, {"provider:charge": 0}], {"provider:charge": 1, "books:line": 1}, [0, 1],
     "failed_visibly", None),
    ([{"provider:charge": 1}, {"provider:charge": 1}], {"provider:charge": 2, "books:line": 1}, [0, 0],
     "silent_mismatch", "a charge with no ledger line"),
    ([{"provider:charge": 1}, {"provider:charge": 1}], {"provider:charge": 2, "books:line": 2}, [0, 0],
     "exactly_once", None),
])
def test_two_uploads_are_judged_each_for_money_and_together_for_the_books(per_upload, whole, dlqs, verdict,
                                                                          finding):
    got, findings = judge_uploads(per_upload, whole, {"provider:charge": 1, "books:line": 1}, dlqs)
    assert got == verdict
    assert finding is None or finding in findings


def test_an_invocation_that_falls_due_during_a_slow_call_runs_while_it_is_in_flight(tmp_path):
    """S3's duplicate, due 5 s after the first delivery, arrives while the first invocation's charge
    is still in flight (until t=29): it runs then, concurrently, not after the first one ends."""
    handler = tmp_path / "clocks.py"
    handler.write_text(CLOCKS)
    with LocalWorld(prefix="inflight") as world:
        runtime = LocalLambda(world, world.env(), handler=f"{handler}:lambda_handler", timeout=30.0)
        runtime.during(Boundary(CHARGE_CALL, 1, Side.BEFORE), lambda: None, in_flight=True)
        event = world.event(world.upload("inflight/order.csv"))
        runtime.send(event)
        runtime.send(event, at=5.0)
        first, duplicate, retry = runtime.run()
    assert (first.delivery, first.start, first.end) == (1, 0.0, 29.0)
    assert (duplicate.delivery, duplicate.start) == (2, 5.0)
    assert duplicate.container != first.container  # the first one's container was busy
    assert "409" in duplicate.error  # the first one's request holds the key at the provider
    assert (retry.delivery, retry.start, retry.outcome) == (2, 65.0, "ok")  # Lambda's retry, a minute on
