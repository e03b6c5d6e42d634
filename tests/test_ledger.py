"""The ledger's conditional writes, against moto's DynamoDB."""
from __future__ import annotations

import dataclasses

import pytest

from idem.core.errors import LostOwnership
from idem.core.handlers.keyed import KeyedLedger
from idem.core.ledger import Ledger, Status, booked_totals
from idem.sim.boundary import Visit, Watch
from idem.sim.sessions import watched_session


def keyed_ledger(world, client=None):
    return KeyedLedger(client or world.dynamodb, world.ledger_table, now=world.clock.now)


def counted(world, action, make=None):
    """Run `action(ledger)` on a ledger whose calls cross the boundary; return the calls made."""
    client = watched_session().client("dynamodb")
    ledger = make(client) if make else Ledger(client, world.ledger_table, world.clock)
    visit = Visit(1, 1, "test")
    with Watch().visiting(visit):
        action(ledger)
    return dict(visit.calls)


def test_claim_once_lets_one_caller_in(world):
    ledger = world.ledger()
    assert [ledger.claim_once("charge#k").won, ledger.claim_once("charge#k").won] == [True, False]
    assert counted(world, lambda ledger: ledger.claim_once("charge#k")) == {"dynamodb:PutItem": 1}


def test_robust_steps_get_put_done(world):
    ledger = world.ledger()
    assert ledger.get_record("charge#k") is None
    assert ledger.put_in_progress("charge#k", "src").won
    assert not ledger.put_in_progress("charge#k").won
    ledger.mark_done("charge#k", {"charge_id": "ch_1"})
    record = ledger.get_record("charge#k")
    assert record.status is Status.DONE and record.result == {"charge_id": "ch_1"}


def test_a_lost_claim_returns_the_record_in_the_same_call(world):
    ledger = keyed_ledger(world)
    assert ledger.claim("charge#k", "owner-a", lease_until=world.clock.now() + 30).won
    claims = []
    calls = counted(world, lambda counted_ledger: claims.append(
        counted_ledger.claim("charge#k", "owner-b", lease_until=world.clock.now() + 30)),
        make=lambda client: keyed_ledger(world, client))
    assert not claims[0].won
    assert claims[0].existing.owner == "owner-a" and claims[0].existing.status is Status.IN_PROGRESS
    assert calls == {"dynamodb:PutItem": 1}  # ReturnValuesOnConditionCheckFailure: no extra read


def test_an_expired_lease_can_be_taken_over(world):
    ledger = keyed_ledger(world)
    ledger.claim("charge#k", "owner-a", lease_until=world.clock.now() + 30)
    world.clock.advance(31)
    assert ledger.claim("charge#k", "owner-b", lease_until=world.clock.now() + 30).won


def test_an_unfinished_record_expires_but_a_done_one_never_does(world):
    ledger = keyed_ledger(world)
    ledger.claim("charge#open", "a", lease_until=world.clock.now() + 30)
    claim = ledger.claim("charge#k", "a", lease_until=world.clock.now() + 30)
    ledger.commit(claim.mine, {"charge_id": "ch_1"}, "alice", 500, "ch_1")
    world.clock.advance(3600)
    assert ledger.claim("charge#open", "b", lease_until=world.clock.now() + 30).won  # expiry in code
    world.clock.advance(90 * 86400)  # a copy three months later still meets the done line
    late = ledger.claim("charge#k", "b", lease_until=world.clock.now() + 30)
    assert not late.won and late.existing.status is Status.DONE
    assert "expires_at" not in next(i for i in world.ledger().items() if i["pk"] == "charge#k")


def test_commit_is_fenced_to_the_owner_and_writes_the_entry_atomically(world):
    ledger = keyed_ledger(world)
    zombie = ledger.claim("charge#k", "zombie", lease_until=world.clock.now() + 30)
    world.clock.advance(31)
    successor = ledger.claim("charge#k", "new-owner", lease_until=world.clock.now() + 30)
    with pytest.raises(LostOwnership):
        ledger.commit(zombie.mine, {}, "alice", 500, "ch_1")
    assert world.ledger().entry("alice") == (0, 0)  # the refused commit wrote no ledger entry either
    ledger.commit(successor.mine, {"charge_id": "ch_1"}, "alice", 500, "ch_1")
    assert world.ledger().entry("alice") == (1, 500)
    assert world.ledger().get_record("charge#k").status is Status.DONE


def test_each_entry_is_one_update_that_adds_to_the_account(world):
    calls = counted(world, lambda ledger: (ledger.add_entry("alice", 500), ledger.add_entry("alice", 250)))
    assert world.ledger().entry("alice") == (2, 750)
    assert calls == {"dynamodb:UpdateItem": 2}


def test_records_excludes_entries(world):
    ledger = world.ledger()
    ledger.add_entry("alice", 500)
    ledger.claim_once("charge#k")
    assert [r.key for r in ledger.records()] == ["charge#k"]


def test_the_commit_replaces_the_claim_with_the_ledger_line_in_one_write(world):
    ledger = keyed_ledger(world)
    claim = ledger.claim("charge#k", "me", lease_until=world.clock.now() + 30)
    calls = counted(world, lambda counted_ledger: counted_ledger.commit(
        claim.mine, {"charge_id": "ch_1"}, "alice", 500, "ch_1"),
        make=lambda client: keyed_ledger(world, client))
    assert calls == {"dynamodb:PutItem": 1}
    line = next(i for i in world.ledger().items() if i["pk"] == "charge#k")
    assert (line["status"], line["account"], line["cents"], line["charge_id"]) == ("done", "alice", 500, "ch_1")
    assert [i["pk"] for i in world.ledger().items()] == ["charge#k"]  # no entry, no counter
    assert booked_totals(world.dynamodb, world.ledger_table, "alice") == (1, 500)
    assert booked_totals(world.dynamodb, world.ledger_table, "bob") == (0, 0)


def test_only_done_lines_enter_the_books_index(world):
    """The index is sparse: a claim, a declined record and a zombie's refused commit add nothing."""
    ledger = keyed_ledger(world)
    claims = {key: ledger.claim(key, "me", lease_until=world.clock.now() + 30)
              for key in ("charge#a", "charge#b", "charge#c")}
    ledger.commit(claims["charge#a"].mine, {"charge_id": "ch_1"}, "alice", 500, "ch_1")
    ledger.finish(claims["charge#b"].mine, Status.DECLINED, {"status": "declined"})
    zombie = dataclasses.replace(claims["charge#c"].mine, owner="zombie")
    with pytest.raises(LostOwnership):
        ledger.commit(zombie, {}, "alice", 500, "ch_3")
    index = world.dynamodb.scan(TableName=world.ledger_table, IndexName="by_account")["Items"]
    assert [item["pk"]["S"] for item in index] == ["charge#a"]
    assert world.ledger().entry("alice") == (1, 500)


def test_records_carry_when_they_were_created(world):
    world.clock.advance(42)
    world.ledger().claim_once("charge#a")
    keyed_ledger(world).claim("charge#b", "o", lease_until=world.clock.now() + 30)
    assert {r.key: r.created_at - world.clock.start for r in world.ledger().records()} == {
        "charge#a": 42, "charge#b": 42}


def test_a_claim_whose_answer_was_lost_finds_its_own_owner_and_goes_on(world):
    ledger = keyed_ledger(world)
    assert ledger.claim("charge#k", "me", lease_until=world.clock.now() + 30).won
    # The SDK re-sends the same put after a lost answer: the record it meets is its own.
    assert ledger.claim("charge#k", "me", lease_until=world.clock.now() + 30).won
    assert not ledger.claim("charge#k", "someone-else", lease_until=world.clock.now() + 30).won
