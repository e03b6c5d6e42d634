"""Time edges for `keyed`: record expiry, and a lease that ends while money is moving.

An unfinished record lives RECORD_TTL_SECONDS (expiry is checked in code, at claim time), a
done one for ever (it is the ledger line); the
lease lasts until the invocation's deadline (30 s here). Both are read off the virtual
clock, so each edge is hit to the second.
"""
from __future__ import annotations

import pytest

from idem.core.clock import EPOCH
from idem.lessons.scribes.leases import last_status, zombie
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld
from idem.core.reconcile.audit import reconcile

TTL = 3600
TIMEOUT = 30.0


@pytest.fixture
def world():
    with LocalWorld(prefix="edges") as w:
        yield w


def late_duplicate(world: LocalWorld, after: float) -> LocalLambda:
    runtime = LocalLambda(world, world.env("keyed", RECORD_TTL_SECONDS=str(TTL)))
    event = world.event(world.upload("alice/late.csv"))
    runtime.send(event)
    runtime.send(event, at=after)
    runtime.run()
    return runtime


def statuses(runtime: LocalLambda) -> list[str]:
    return [a.result["processed"][0]["status"] for a in runtime.attempts]


@pytest.mark.parametrize("after", [TTL - 1, TTL, TTL + 1, 21_600])
def test_a_done_record_turns_a_copy_away_at_any_age(world: LocalWorld, after: float) -> None:
    """A done record is keyed's ledger line: the commit removes its expiry, so a copy of the
    event one second or six hours past RECORD_TTL_SECONDS is still a duplicate."""
    runtime = late_duplicate(world, after=after)
    assert statuses(runtime) == ["charged", "duplicate"]
    assert len(world.provider().charges()) == 1
    assert world.ledger().entry("alice") == (1, 500)
    assert world.ledger().records()[0].expires_at == 0
    report = reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                       world.provider_table, now=world.clock.now())
    assert report.clean, report.render()


def test_a_lease_that_ends_in_flight_refuses_the_zombies_commit() -> None:
    """The first invocation stalls right after the provider charged (the call is slow to
    return) past its lease; S3 delivers the event again at that moment."""
    outcome = zombie("keyed", pause=TIMEOUT + 1, timeout=TIMEOUT)
    first, successor, retry = outcome.trace
    # the successor took the expired lease; its charge was the zombie's, replayed
    assert (successor.delivery, successor.outcome) == (2, "ok")
    assert [step for _, step in successor.steps] == ["before_charge", "replayed", "recorded"]
    # the zombie's commit was refused by the owner fence: it stood aside
    assert last_status(outcome, delivery=1, attempt=1) == "superseded"
    assert first.outcome == "timeout"  # it overran its deadline, so Lambda retries it
    assert last_status(outcome, delivery=1, attempt=2) == "duplicate"
    assert (outcome.charges, outcome.ledger, outcome.record, outcome.verdict) == (1, 1, "done", "exactly_once")
    (record,) = [i for i in outcome.items if i["pk"].startswith("charge#")]
    assert record["lease_until"] == EPOCH + (TIMEOUT + 1) + TIMEOUT  # the successor's lease
    assert record["result"]["charge_id"] == first.result["processed"][0]["charge_id"]


def test_a_duplicate_inside_the_lease_waits_its_turn() -> None:
    outcome = zombie("keyed", pause=TIMEOUT - 1, timeout=TIMEOUT)
    assert last_status(outcome, delivery=2) == "WorkInProgress"  # live lease: fail, retry later
    assert last_status(outcome, delivery=1) == "charged"
    assert last_status(outcome, delivery=2, attempt=2) == "duplicate"
    assert (outcome.charges, outcome.ledger, outcome.verdict) == (1, 1, "exactly_once")


def test_robust_charges_twice_when_a_provider_call_is_slow_on_purpose() -> None:
    """The same stall without a lease or a provider key: the copy reads in_progress and
    charges again."""
    assert zombie("robust", pause=TIMEOUT + 1, timeout=TIMEOUT).charges == 2
