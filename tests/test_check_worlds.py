"""idem.explore.run.worlds: a process keeps its world between batches, and no result depends on it."""
from __future__ import annotations

from pathlib import Path

import pytest

from idem.explore.check import discover
from idem.explore.families.build import schedules_for
from idem.explore.families.schedule import Schedule
from idem.explore.judge.result import Result
from idem.explore.run import pool, worlds
from idem.explore.run.runner import run_batch
from idem.explore.target.target import resolve
from idem.sim.world import LocalWorld, _live_prefixes, ensure_moto, pk_text

KEYED = "idem.core.handlers.keyed:lambda_handler"
LOCK_IN_FINALLY = "tests/handlers/lock_in_finally.py:lambda_handler"


@pytest.fixture(autouse=True)
def _no_kept_world():
    worlds.close()
    yield
    worlds.close()


def test_a_world_serves_batch_after_batch_until_it_is_full(monkeypatch: pytest.MonkeyPatch):
    closed = []
    close = LocalWorld.close
    monkeypatch.setattr(LocalWorld, "close", lambda world: (closed.append(world), close(world))[1])
    with worlds.world_for(True, range(10)) as first:
        pass
    with worlds.world_for(True, range(10, worlds.WORLD_RUNS)) as second:
        pass
    assert second is first and first.runs == worlds.WORLD_RUNS
    with worlds.world_for(True, [worlds.WORLD_RUNS]) as third:
        pass
    assert third is not first and third.runs == 1
    assert closed == [first.world]  # the full one was deleted, the fresh one is live
    assert third.world.prefix in _live_prefixes


def test_a_batch_in_the_other_kind_of_bucket_gets_a_fresh_world_under_the_same_names():
    with worlds.world_for(True, [1]) as versioned:
        pass
    with worlds.world_for(False, [2]) as unversioned:
        pass
    assert versioned.world.versioned and not unversioned.world.versioned
    # the clean run's state is compared by table name: every world names its tables alike
    assert unversioned.world.ledger_table == versioned.world.ledger_table
    worlds.close()
    assert unversioned.world.prefix not in _live_prefixes


def test_a_batch_that_raises_leaves_no_world_behind_to_reuse():
    with pytest.raises(RuntimeError):
        with worlds.world_for(True, [5]) as broken:
            raise RuntimeError("a handler that ended the batch")
    assert broken.world.prefix not in _live_prefixes
    with worlds.world_for(True, [6]) as fresh:
        assert fresh is not broken


def test_a_number_run_again_gets_a_fresh_world():
    with worlds.world_for(True, [1, 2]) as first:
        pass
    with worlds.world_for(True, [3]) as second:
        pass
    with worlds.world_for(True, [2]) as again:
        pass
    assert second is first and again is not first and again.numbers == {2}


def _seen(result: Result) -> tuple:
    """Everything a report shows of one schedule's result."""
    return (result.verdict, result.effects, result.dlq, result.findings,
            [(a.outcome, a.error, a.logs, a.calls) for a in result.attempts])


@pytest.mark.parametrize("target", [KEYED, LOCK_IN_FINALLY])
def test_a_schedule_s_result_is_the_same_whatever_ran_before_it_in_its_world(target: str):
    ensure_moto()
    resolved = resolve(target)
    crossed, baseline, _ = discover(resolved, (), "make_provider")
    found = schedules_for(crossed, (1,), ("versioned",))
    picked = [i for i, s in enumerate(found) if s.fault is not None][:6]
    alone = {i: _seen(r) for i in picked
             for r in (worlds.close(), run_batch(resolved, [found[i]], baseline, (), "make_provider", [i]))[1]}
    worlds.close()
    together = run_batch(resolved, [found[i] for i in reversed(picked)], baseline, (), "make_provider",
                         list(reversed(picked)))
    assert {i: _seen(r) for i, r in zip(reversed(picked), together)} == alone
    assert any(outcome != "ok" for i in picked for outcome, *_ in alone[i][4])  # faults struck: not all alike


def test_a_table_read_back_leaves_out_the_items_already_read_and_only_those():
    with LocalWorld(prefix="readback") as world:
        for pk in ("order#1", "order#2"):
            world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": pk}, "line": {"N": "1"}})
        every = world.table_items(world.ledger_table)
        assert {pk_text(item["pk"]) for item in every} == {"S:order#1", "S:order#2"}
        # an item updated since it was read keeps its key: still left out
        world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "order#1"}, "line": {"N": "2"}})
        assert world.table_items(world.ledger_table, leave_out={"S:order#1"}) == [
            {"pk": {"S": "order#2"}, "line": {"N": "1"}}]
        assert pk_text({"N": "7"}) == "N:7" and pk_text(None) == "null"


def test_a_read_back_lists_the_items_in_the_order_of_a_consistent_scan():
    """table_items sorts string keys by their text and any other keys moto's way: a Scan's order."""
    with LocalWorld(prefix="readorder") as world:
        for pk in ("order#b", "Order#a", "order#10", "order#9", "\u00e9", "account#1", "order#1 "):
            world.dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": pk}})
        scanned = world.dynamodb.scan(TableName=world.ledger_table, ConsistentRead=True)["Items"]
        assert world.table_items(world.ledger_table) == scanned
        assert [item["pk"]["S"] for item in scanned] == [
            "Order#a", "account#1", "order#1 ", "order#10", "order#9", "order#b", "\u00e9"]  # by code point
        numbers = "readorder-numbers"
        world.dynamodb.create_table(TableName=numbers, BillingMode="PAY_PER_REQUEST",
                                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "N"}],
                                    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        try:
            for pk in ("10", "9", "1.5", "-2"):
                world.dynamodb.put_item(TableName=numbers, Item={"pk": {"N": pk}})
            assert [item["pk"]["N"] for item in world.table_items(numbers)] == ["-2", "1.5", "9", "10"]  # by value
        finally:
            world.dynamodb.delete_table(TableName=numbers)


def test_chapter_11_says_how_often_the_check_makes_a_fresh_world():
    source = (Path(__file__).parents[1] / "notebooks" / "source" / "11_check_your_own_handler.py").read_text()
    assert f"a fresh one every {worlds.WORLD_RUNS}\n# runs" in source


class HeldPool:
    """A pool that runs nothing until asked: `apply_async` keeps each batch; `end_one` answers the oldest."""

    def __init__(self) -> None:
        self.held: list[tuple[list[int], object]] = []

    def apply_async(self, function, args, callback, error_callback):
        self.held.append((list(args[5]), callback))  # args[5]: the batch's schedule numbers

    def end_one(self) -> None:
        batch, callback = self.held.pop(0)
        callback([f"result {i}" for i in batch])


@pytest.mark.parametrize("count,unversioned,workers", [(210, 0, 2), (41, 11, 2), (3, 1, 2), (500, 60, 4), (7, 0, 1)])
def test_dispatch_hands_out_every_schedule_once_in_batches_of_one_bucket(count, unversioned, workers, monkeypatch):
    schedules = [Schedule(retries=0, overwrite="unversioned" if n % 5 == 0 and n < 5 * unversioned else "")
                 for n in range(count)]
    held = HeldPool()
    runs = pool.Dispatch(schedules, held, workers, lambda batch: (None,) * 5 + (batch,))
    runs.add(list(range(count))[::-1], rank=1)  # any order a phase lists them in
    sizes, seen = [], []
    while held.held:
        assert len(held.held) <= workers + pool.AHEAD  # never more out than the processes and one each ahead
        ready = len(runs.ready) + sum(len(b) for b, _ in held.held[1:])
        batch = held.held[0][0]
        assert len({schedules[i].overwrite for i in batch}) == 1  # one bucket each
        assert len(batch) <= pool.BATCH
        sizes.append((len(batch), ready))
        held.end_one()
        got = runs.finished()
        assert got == [(i, f"result {i}") for i in batch]
        seen += batch
    assert sorted(seen) == list(range(count))  # each once
    if count >= 100:
        assert sizes[0][0] > sizes[-1][0]  # large batches while much is ready, small ones at the end


def test_dispatch_hands_out_the_lowest_rank_first():
    schedules = [Schedule(retries=0) for _ in range(15)]
    held = HeldPool()
    runs = pool.Dispatch(schedules, held, 1, lambda batch: (None,) * 5 + (batch,))
    runs.add([8, 9, 10, 11], rank=5)
    runs.add([0, 1, 2, 3], rank=2)  # while the first batch is out: the next takes these first
    assert held.held[0][0] == [8, 9, 10, 11] and held.held[1][0] == [0, 1, 2, 3]
    runs.add([4, 5, 6, 7, 12, 13], rank=3)  # two out already: these wait
    runs.add([14], rank=4)
    assert len(held.held) == 2
    held.end_one()
    assert runs.finished() == [(i, f"result {i}") for i in (8, 9, 10, 11)]
    held.end_one()
    runs.finished()  # the next result asked for: what is ready goes out first, lowest rank first
    assert [b for b, _ in held.held] == [[4, 5, 6, 7]]
    held.end_one()
    runs.finished()
    assert [b for b, _ in held.held] == [[12, 13, 14]]


def test_with_no_pool_dispatch_runs_one_batch_at_a_time_here(monkeypatch):
    ran = []
    monkeypatch.setattr(pool.runner, "run_batch", lambda *args: ran.append(list(args[5])) or [f"r{i}" for i in args[5]])
    schedules = [Schedule(retries=0) for _ in range(9)]
    runs = pool.Dispatch(schedules, None, 1, lambda batch: (None,) * 5 + (batch,))
    runs.add(list(range(9)), rank=0)
    assert ran == []  # nothing runs until a result is asked for
    assert runs.finished() == [(i, f"r{i}") for i in ran[0]] and len(ran) == 1
