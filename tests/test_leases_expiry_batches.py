"""The runs chapters 05-07 show: concurrent copies, zombies, leases, late copies, the messy batch."""
from __future__ import annotations

import pytest

from idem.sim.faults import FaultPlan
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld
from idem.core.reconcile.audit import reconcile
from idem.lessons.auditing import batches, expiry
from idem.lessons.scribes import leases
from idem.explore import redrive


def test_robust_double_charges_when_a_copy_arrives_before_done():
    for step in ("before_charge", "charged"):
        run = leases.copy_at("robust", step)
        assert run.charges == 2, step
        assert [leases.last_status(run, d) for d in (1, 2)] == ["charged", "charged"]


def test_robust_copy_after_done_stands_down():
    run = leases.copy_at("robust", "recorded")
    assert run.charges == 1
    assert leases.last_status(run, delivery=2) == "duplicate"


def test_keyed_copy_during_a_live_lease_waits_for_a_retry():
    run = leases.copy_at("keyed", "charged")
    assert (run.charges, run.ledger, run.verdict) == (1, 1, "exactly_once")
    assert leases.last_status(run, delivery=2, attempt=1) == "WorkInProgress"
    assert leases.last_status(run, delivery=2, attempt=2) == "duplicate"


def test_copy_at_rejects_an_unknown_step():
    with pytest.raises(ValueError, match="choose from before_charge, charged, recorded"):
        leases.copy_at("robust", "after_lunch")


def test_keyed_zombie_commit_is_refused_and_money_moves_once():
    run = leases.zombie("keyed", pause=45)
    assert (run.charges, run.ledger, run.record) == (1, 1, "done")
    assert leases.last_status(run, 1, 1) == "superseded"
    assert leases.last_status(run, 2, 1) == "charged"
    assert leases.lease_windows(run) == [(1, 0.0, 30.0), (2, 45.0, 75.0)]


def test_keyed_short_stall_keeps_the_lease():
    run = leases.zombie("keyed", pause=20)
    assert run.charges == 1
    assert leases.last_status(run, 2, 1) == "WorkInProgress"
    assert leases.lease_windows(run) == [(1, 0.0, 30.0)]


def test_robust_zombie_double_charges_and_has_no_lease():
    run = leases.zombie("robust", pause=45)
    assert run.charges == 2
    assert leases.lease_windows(run) == []


def test_zombie_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown handler"):
        leases.zombie("careful")
    with pytest.raises(ValueError, match="0 or more"):
        leases.zombie("keyed", pause=-1)


def test_last_status_names_a_missing_invocation():
    run = leases.copy_at("robust", "recorded")
    with pytest.raises(ValueError, match="delivery 3, attempt 1"):
        leases.last_status(run, delivery=3)


def test_keyed_done_record_never_expires_so_a_late_copy_is_a_duplicate():
    for swept in (False, True):
        late = expiry.late_duplicate("keyed", ttl_seconds=600, delay=7200, swept=swept)
        assert not late.expired and late.expires_at == float("inf")
        assert late.late_status == "duplicate"
        assert (late.outcome.charges, late.outcome.ledger, late.outcome.verdict) == (1, 1, "exactly_once")
        assert late.row()["record TTL (s)"] == "never (done)"


def test_a_record_that_outlives_the_copy_stops_it():
    for handler in ("robust", "keyed"):
        late = expiry.late_duplicate(handler, ttl_seconds=86_400, delay=21_600, swept=True)
        assert not late.expired
        assert late.late_status == "duplicate"
        assert (late.outcome.charges, late.outcome.ledger) == (1, 1)


def test_robust_late_copy_depends_on_the_ttl_sweep():
    kept = expiry.late_duplicate("robust", ttl_seconds=600, delay=7200, swept=False)
    swept = expiry.late_duplicate("robust", ttl_seconds=600, delay=7200, swept=True)
    assert (kept.outcome.charges, swept.outcome.charges) == (1, 2)


def test_late_duplicate_rejects_bad_input():
    with pytest.raises(ValueError, match="MaximumEventAgeInSeconds"):
        expiry.late_duplicate("keyed", delay=30_000)
    with pytest.raises(ValueError, match="RECORD_TTL_SECONDS"):
        expiry.late_duplicate("keyed", ttl_seconds=0)


def test_ttl_sweep_deletes_only_expired_items():
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env("robust", RECORD_TTL_SECONDS="600"))
        runtime.send(world.event(world.upload("alice/a.csv")))
        runtime.run()
        assert expiry.ttl_sweep(world) == []
        world.clock.advance(600)
        gone = expiry.ttl_sweep(world)
        assert len(gone) == 1 and gone[0].startswith("charge#")
        assert [item["pk"] for item in world.ledger().items()] == ["account#alice"]


def test_ttl_sweep_leaves_keyeds_done_lines():
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env("keyed", RECORD_TTL_SECONDS="600"))
        runtime.send(world.event(world.upload("alice/a.csv")))
        runtime.run()
        world.clock.advance(30 * 86_400)
        assert expiry.ttl_sweep(world) == []
        assert world.ledger().entry("alice") == (1, 500)


def test_redrive_finishes_the_work_and_empties_the_queue():
    with LocalWorld() as world:
        broken = LocalLambda(world, world.env("robust"), fault=FaultPlan.at_point("at_charge", "always"))
        broken.send(world.event(world.upload("alice/a.csv")))
        broken.run()
        assert world.failure_queue_depth() == 1
        fixed = LocalLambda(world, world.env("robust"))
        assert redrive.redrive_local(fixed) == 1
        assert world.failure_queue_depth() == 0
        assert [str(r.status) for r in world.ledger().records()] == ["done"]
        assert len(world.provider().charges()) == 1
        assert redrive.redrive_local(fixed) == 0


def _report(world: LocalWorld):
    return reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                     world.provider_table, now=world.clock.now())


def test_the_ordinary_upload_alone_reconciles_clean():
    with LocalWorld() as world:
        batches.run_batch(world, batches.MESSY_BATCH[:1])
        assert _report(world).clean


def test_messy_batch_leaves_every_kind_of_finding():
    with LocalWorld() as world:
        attempts = batches.run_batch(world)
        world.clock.advance(3600)
        report = _report(world)
        missing = sorted(m.object.split("/")[3] for m in report.missing)
        assert missing == ["carol", "erin"]
        # keyed's record names the order (account#order#order_id), not the upload: one per order
        assert [s.source for s in report.stuck] == ["dave#order#dave-order-0104"]
        assert [d.reference.split("/")[3] for d in report.double_charges] == ["bob"]
        assert [(a.account, a.provider_charges, a.ledger_charges) for a in report.mismatches] == [
            ("bob", 2, 1), ("dave", 1, 0)]
        assert batches.footprints(world, attempts) == {
            "objects uploaded": 5, "invocations": 8, "retries": 4, "records done": 2,
            "provider charges": 4, "ledger entries": 2, "failure queue depth": 1}


def test_batch_owners_differ_between_uploads():
    with LocalWorld() as world:
        batches.run_batch(world, (batches.BatchUpload("alice/a.csv", "keyed"),
                                  batches.BatchUpload("bob/b.csv", "keyed")))
        owners = {r.owner for r in world.ledger().records()}
        assert len(owners) == 2
