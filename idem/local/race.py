"""Real threads racing for one claim, round after round.

Each round, `threads` threads wait at a barrier and then try to claim the same fresh key.
The conditional put lets exactly one of them win. The read-then-write version (get the
item, and put it if it was absent) lets every thread that read "absent" win: the gap
between the read and the write is exactly the size of the bug. To show that gap without
waiting for luck, the read-then-write racers also meet at a barrier between their read
and their write, which is the interleaving production produces only now and then.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from ..dynamo import to_item
from ..ledger import Ledger
from .world import LocalWorld

STRATEGIES = ("conditional_put", "read_then_write")


@dataclass(frozen=True)
class RaceReport:
    strategy: str
    threads: int
    rounds: int
    winners_per_round: tuple[int, ...]

    @property
    def clean_rounds(self) -> int:
        """Rounds with exactly one winner."""
        return sum(1 for w in self.winners_per_round if w == 1)

    def summary(self) -> str:
        worst = max(self.winners_per_round, default=0)
        return (f"{self.strategy}: {self.clean_rounds} of {self.rounds} rounds had exactly one "
                f"winner among {self.threads} threads (most winners in a round: {worst})")


@contextmanager
def switch_interval(seconds: float | None) -> Iterator[None]:
    """Lower Python's thread switch interval to provoke more interleavings."""
    old = sys.getswitchinterval()
    if seconds is not None:
        sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _conditional_put(ledger: Ledger, key: str, _: threading.Barrier) -> bool:
    return ledger.claim_once(key, source="race")


def _read_then_write(ledger: Ledger, key: str, gap: threading.Barrier) -> bool:
    seen = ledger.client.get_item(TableName=ledger.table, Key=to_item({"pk": key}),
                                  ConsistentRead=True).get("Item")
    gap.wait()  # every racer has read; now they all write
    if seen is not None:
        return False
    ledger.client.put_item(TableName=ledger.table, Item=to_item({"pk": key, "status": "claimed"}))
    return True


_RACERS: dict[str, Callable[[Ledger, str, threading.Barrier], bool]] = {
    "conditional_put": _conditional_put,
    "read_then_write": _read_then_write,
}


def race(threads: int = 16, rounds: int = 200, strategy: str = "conditional_put",
         world: LocalWorld | None = None, switch: float | None = 1e-6) -> RaceReport:
    """Race `threads` real threads for one key per round; count the winners of each round."""
    if strategy not in _RACERS:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if threads < 2 or rounds < 1:
        raise ValueError("a race needs at least 2 threads and 1 round")
    own_world = world is None
    world = world or LocalWorld(prefix="race")
    racer = _RACERS[strategy]
    winners: list[int] = []
    try:
        with switch_interval(switch):
            for round_number in range(rounds):
                winners.append(_one_round(world, racer, threads, f"race#{strategy}#{round_number}"))
    finally:
        if own_world:
            world.close()
    return RaceReport(strategy, threads, rounds, tuple(winners))


def _one_round(world: LocalWorld, racer: Callable[..., bool], threads: int, key: str) -> int:
    start, gap = threading.Barrier(threads), threading.Barrier(threads)
    wins: list[bool] = []
    lock = threading.Lock()

    def run() -> None:
        ledger = world.ledger()
        start.wait()
        won = racer(ledger, key, gap)
        with lock:
            wins.append(won)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(wins)
