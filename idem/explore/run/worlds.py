"""The check's local worlds, kept by each process between its batches of schedules.

A world (an S3 bucket, the ledger and provider tables and the failure queue, on moto) costs more
to make and delete than a dozen schedules cost to run. Each process (the check's own, and each
worker of its pool) keeps its world and runs batch after batch in it, until it has served
`WORLD_RUNS` schedules; then it is deleted and a fresh one made: moto's reads, and the check's
own read-back of the ledger, grow with what a table holds. So batches can be small, handed out
as their schedules become ready (`idem.explore.run.pool.Dispatch`), without a world made for
each. One world at a time, of one kind of bucket (versioned or not), always under the same
names: the state a clean run leaves is compared by table and key (`idem.explore.judge.state`),
so every schedule's world must name its tables as the clean run's did. A batch in the other kind
of bucket gets a fresh world.

Nothing a schedule is judged on depends on which world it ran in, or after which schedules:
each has its own upload number, name and account, and its charges and ledger lines are told
from those of the schedules before it in the same world (`charges_seen`, `lines_seen`). A
number runs once in a world: a batch that brings a number back (the same upload and account
again, as a caller running one schedule twice would) gets a fresh world.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ...sim.world import LocalWorld
from . import uploads

#: schedules one world serves before a fresh one is made
WORLD_RUNS = 80


@dataclass
class KeptWorld:
    """A world, and what the schedules run in it so far left there."""

    world: LocalWorld
    charges_seen: set[str] = field(default_factory=set)
    lines_seen: set[str] = field(default_factory=set)
    numbers: set[int] = field(default_factory=set)  # the schedules' numbers run in it

    @property
    def runs(self) -> int:
        return len(self.numbers)


_kept: list[KeptWorld] = []  # this process's world, when it keeps one


@contextlib.contextmanager
def world_for(versioned: bool, numbers: Iterable[int]) -> Iterator[KeptWorld]:
    """This process's world for the schedules numbered `numbers`, in a versioned (or
    unversioned) bucket: the one kept from earlier batches while it has room and has run none
    of them, else a fresh one. A batch that raises leaves its world half-used: the world is
    deleted, never handed out again."""
    numbers = set(numbers)
    if _kept and (_kept[0].world.versioned != versioned or _kept[0].runs + len(numbers) > WORLD_RUNS
                  or numbers & _kept[0].numbers):
        close()
    if not _kept:
        world = LocalWorld(prefix="check", versioned=versioned, provider_in_memory=True)
        _kept.append(KeptWorld(uploads.use_bucket(world)))  # the trigger's bucket, with --template
    kept = _kept[0]
    try:
        yield kept
    except BaseException:
        close()
        raise
    kept.numbers |= numbers


def close() -> None:
    """Delete this process's kept world, if it keeps one."""
    while _kept:
        _kept.pop().world.close()
