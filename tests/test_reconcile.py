"""The reconciliation job finds what was planted, and calls a clean batch clean."""
from __future__ import annotations

import pytest

from idem.core.handlers.keyed import KeyedLedger
from idem.core.keys import idempotency_key
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld
from idem.core.reconcile.audit import Report, reconcile, scheduled_handler


def process(world: LocalWorld, handler: str, *keys: str, deliveries: int = 1, **env: str) -> list:
    """Upload each key and let the function handle it; returns the uploaded objects."""
    objects = [world.upload(k) for k in keys]
    runtime = LocalLambda(world, world.env(handler, **env))
    for obj in objects:
        for n in range(deliveries):
            runtime.send(world.event(obj), at=world.clock.t + 5.0 * n)
    runtime.run()
    return objects


def job(world: LocalWorld, recipe: str = "version", later: float = 3600) -> Report:
    return reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                     world.provider_table, now=world.clock.now() + later, recipe=recipe)


@pytest.fixture
def world():
    with LocalWorld(prefix="recon") as w:
        yield w


def test_a_clean_batch_is_reported_clean(world: LocalWorld) -> None:
    process(world, "keyed", "alice/1.csv", "alice/2.csv", "bob/1.csv", deliveries=2)
    report = job(world)
    assert report.clean
    assert (report.objects, report.records, report.charges) == (3, 3, 3)
    assert report.render().splitlines()[-1].startswith("clean:")


def test_an_object_nobody_processed_is_missing(world: LocalWorld) -> None:
    process(world, "keyed", "alice/1.csv")
    lost = world.upload("alice/2.csv")  # S3 never told the function
    report = job(world)
    assert [m.object for m in report.missing] == [lost.uri]
    assert [m.record for m in report.missing] == ["-"]
    assert report.stuck == report.double_charges == report.mismatches == []
    assert f"MISSING  {lost.uri}" in report.render()


def test_a_record_stuck_in_progress_past_its_lease_is_found(world: LocalWorld) -> None:
    process(world, "keyed", "alice/1.csv")
    stuck = world.upload("alice/2.csv")
    key = idempotency_key(stuck)
    lease_until = world.clock.now() + 30
    keyed = KeyedLedger(world.dynamodb, world.ledger_table, now=world.clock.now)
    assert keyed.claim(key, "crashed-owner", lease_until=lease_until, source="planted").won
    assert job(world, later=29).stuck == []  # its lease is still live: someone is on it
    report = job(world, later=90)
    assert [(s.key, s.source, s.overdue_seconds) for s in report.stuck] == [(key, "planted", 60)]
    assert [(m.object, m.record) for m in report.missing] == [(stuck.uri, "in_progress")]
    assert "STUCK    planted: in_progress, nobody on it for 60 s" in report.render()


def test_a_lease_less_record_is_stuck_only_once_no_invocation_can_still_run(world: LocalWorld) -> None:
    stuck = world.upload("alice/2.csv")
    world.ledger().put_in_progress(idempotency_key(stuck), source="robust-style")  # no lease
    assert job(world, later=899).stuck == []  # a 15-minute invocation could still be on it
    (found,) = job(world, later=960).stuck
    assert (found.source, found.overdue_seconds) == ("robust-style", 60)


def test_a_double_charge_is_found(world: LocalWorld) -> None:
    (twice,) = process(world, "naive", "alice/1.csv", deliveries=2)
    report = job(world)
    assert [(d.reference, len(d.charge_ids)) for d in report.double_charges] == [(twice.uri, 2)]
    assert report.missing == [] and report.stuck == []
    # naive wrote both entries: its books agree with the provider, and are both wrong
    assert report.mismatches == []
    assert report.flagged_objects() == {twice.uri}


def test_a_charge_the_ledger_never_recorded_is_a_mismatch(world: LocalWorld) -> None:
    process(world, "keyed", "alice/1.csv")
    orphan = world.upload("bob/1.csv")
    world.provider().charge(customer="bob", amount=500, currency="usd", reference=orphan.uri)  # money moved; the function died before its books
    report = job(world)
    assert [(a.account, a.provider_charges, a.provider_cents, a.ledger_charges, a.ledger_cents)
            for a in report.mismatches] == [("bob", 1, 500, 0, 0)]
    assert report.missing == []  # it was charged, so it is not missing work
    assert "MISMATCH account bob: provider 1 charges (500 cents), ledger 0 (0 cents)" in report.render()


def test_the_content_recipe_is_matched_without_the_sequencer(world: LocalWorld) -> None:
    process(world, "keyed", "alice/1.csv", KEY_RECIPE="content")
    assert job(world, recipe="content").clean
    assert len(job(world, recipe="version").missing) == 0  # charged, so not missing either way
    world.upload("alice/2.csv")
    assert len(job(world, recipe="content").missing) == 1


def test_an_unversioned_bucket_is_reconciled_by_key() -> None:
    with LocalWorld(prefix="reconplain", versioned=False) as plain:
        (obj,) = process(plain, "keyed", "alice/1.csv")
        assert obj.version_id is None
        assert job(plain).clean


def test_recipes_that_name_the_attempt_are_refused(world: LocalWorld) -> None:
    with pytest.raises(ValueError, match="derives its key from the attempt"):
        job(world, recipe="uuid")
    with pytest.raises(ValueError, match="unknown key recipe"):
        job(world, recipe="nope")


def test_the_scheduled_handler_reads_its_environment(world: LocalWorld, capsys) -> None:
    process(world, "keyed", "alice/1.csv")
    env = {"UPLOAD_BUCKET": world.bucket, "LEDGER_TABLE": world.ledger_table,
           "PROVIDER_TABLE": world.provider_table}
    result = scheduled_handler({}, None, env=env, session=world.session, now=world.clock.now())
    assert result["clean"] is True and result["objects"] == 1
    assert "clean: every object done once" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match="UPLOAD_BUCKET not set"):
        scheduled_handler({}, None, env={**env, "UPLOAD_BUCKET": ""}, session=world.session, now=0)


def test_the_books_are_compared_per_customer_through_the_account_s_mapping(world: LocalWorld) -> None:
    """An account linked to a customer (`account#ACCOUNT`, kind customer) is that customer's in
    the comparison: its lines against that customer's charges."""
    from idem.core.dynamo import to_item

    process(world, "keyed", "alice/1.csv")
    (charge,) = world.provider().charges()

    def link(customer: str) -> None:
        world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({
            "pk": "account#alice", "kind": "customer", "account": "alice", "customer": customer}))

    link(charge.customer)
    assert job(world).clean
    link("cus_someone_else")  # the books say alice's customer is another than the one charged
    assert [(m.account, m.provider_charges, m.ledger_charges) for m in job(world).mismatches] == [
        (charge.customer, 1, 0), ("alice (cus_someone_else)", 0, 1)]
