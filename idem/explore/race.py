"""Real threads racing, round after round: for one bare claim, or through a whole handler.

Bare claims (`conditional_put`, `read_then_write`): each round, `threads` threads wait at
a barrier and then try to claim the same fresh key. The conditional put lets exactly one
of them win. The read-then-write version (get the item, and put it if it was absent) lets
every thread that read "absent" win: the gap between the read and the write is exactly the
size of the bug. To show that gap without waiting for luck, the read-then-write racers also
meet at a barrier between their read and their write, which is the interleaving production
produces only now and then.

Handlers (`naive`, `claim_first`, `robust`, `keyed`): each round uploads a fresh object and
`threads` threads deliver its event at once, each through its own `idem.core.entry.App` (its own
container, as Lambda runs concurrent invocations) over the shared moto backend. A round's
"winners" are the charges the provider made for that object: exactly one is clean.

The threads live for the whole race and meet at barriers between rounds; the outcome is
read back in one pass at the end.
"""
from __future__ import annotations

import itertools
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from ..core.dynamo import to_item
from ..core.patterns import HANDLERS
from ..core.ledger import Ledger
from ..sim.world import LocalWorld
from ..core import entry
from ..sim.boundary import watched_session
from ..sim.runtime import LambdaContext

CLAIM_STRATEGIES = ("conditional_put", "read_then_write")
STRATEGIES = CLAIM_STRATEGIES + tuple(HANDLERS)
RACE_TIMEOUT = 30.0  # the racers' Lambda timeout, in virtual seconds (nobody's lease ends)


@dataclass(frozen=True)
class RaceReport:
    strategy: str
    threads: int
    rounds: int
    winners_per_round: tuple[int, ...]
    errors: int = 0  # invocations that raised (e.g. keyed's WorkInProgress for the losers)

    @property
    def clean_rounds(self) -> int:
        """Rounds with exactly one winner."""
        return sum(1 for w in self.winners_per_round if w == 1)

    def summary(self) -> str:
        worst = max(self.winners_per_round, default=0)
        what = "charge" if self.strategy in HANDLERS else "winner"  # handlers: charges are the winners
        return (f"{self.strategy}: {self.clean_rounds} of {self.rounds} rounds had exactly one "
                f"{what} among {self.threads} threads (most {what}s in a round: {worst})")


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


def conditional_put(ledger: Ledger, key: str, _: threading.Barrier) -> bool:
    return ledger.claim_once(key, source="race").won


def read_then_write(ledger: Ledger, key: str, gap: threading.Barrier) -> bool:
    seen = ledger.client.get_item(TableName=ledger.table, Key=to_item({"pk": key}),
                                  ConsistentRead=True).get("Item")
    gap.wait()  # every racer has read; now they all write
    if seen is not None:
        return False
    ledger.client.put_item(TableName=ledger.table, Item=to_item({"pk": key, "status": "claimed"}))
    return True


_RACERS: dict[str, Callable[[Ledger, str, threading.Barrier], bool]] = {
    "conditional_put": conditional_put,
    "read_then_write": read_then_write,
}


def race(threads: int = 16, rounds: int = 200, strategy: str = "conditional_put",
         world: LocalWorld | None = None, switch: float | None = 1e-6) -> RaceReport:
    """Race `threads` real threads, `rounds` times; count the winners of each round."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if threads < 2 or rounds < 1:
        raise ValueError("a race needs at least 2 threads and 1 round")
    own_world = world is None
    world = world or LocalWorld(prefix="race")
    try:
        with switch_interval(switch):
            if strategy in CLAIM_STRATEGIES:
                return _race_claims(world, threads, rounds, strategy)
            return _race_handler(world, threads, rounds, strategy)
    finally:
        if own_world:
            world.close()


def _race_claims(world: LocalWorld, threads: int, rounds: int, strategy: str) -> RaceReport:
    racer, gap = _RACERS[strategy], threading.Barrier(threads)
    ledgers = [world.ledger() for _ in range(threads)]
    keys = [f"race#{strategy}#{world.prefix}#{n}" for n in range(rounds)]
    wins = [[False] * threads for _ in range(rounds)]

    def work(index: int, round_number: int) -> None:
        wins[round_number][index] = racer(ledgers[index], keys[round_number], gap)

    run_rounds(threads, rounds, work)
    return RaceReport(strategy, threads, rounds, tuple(sum(w) for w in wins))


def _race_handler(world: LocalWorld, threads: int, rounds: int, handler: str) -> RaceReport:
    tokens, token_lock = itertools.count(1), threading.Lock()

    def new_token() -> str:
        with token_lock:
            return f"racer-{next(tokens)}"

    env = world.env(handler)
    apps = [entry.App.from_environment(env, session=watched_session(), clock=world.clock,
                                       provider=world.provider(), new_token=new_token,
                                       log=lambda _: None)
            for _ in range(threads)]
    objects = [world.upload(f"racer/round-{n:05d}.csv") for n in range(rounds)]
    events = [world.event(obj) for obj in objects]
    errors = [0] * threads

    def work(index: int, round_number: int) -> None:
        context = LambdaContext(f"round-{round_number}-thread-{index}", "idem-race",
                                world.clock.now() + RACE_TIMEOUT, world.clock)
        try:
            apps[index].handle(events[round_number], context)
        except Exception:  # a loser told to retry later: Lambda would; the race counts charges
            errors[index] += 1

    run_rounds(threads, rounds, work)
    charged: dict[str, int] = {}
    for charge in world.provider().charges():
        charged[charge.reference] = charged.get(charge.reference, 0) + 1
    return RaceReport(handler, threads, rounds, tuple(charged.get(o.uri, 0) for o in objects),
                      errors=sum(errors))


def run_rounds(threads: int, rounds: int, work: Callable[[int, int], None]) -> None:
    """Start `threads` threads once; in each round they all call work(index, round)
    together, released by one barrier, and wait for each other at the end of the round."""
    start = threading.Barrier(threads)
    failures: list[BaseException] = []

    def loop(index: int) -> None:
        try:
            for round_number in range(rounds):
                start.wait()
                work(index, round_number)
        except threading.BrokenBarrierError:
            return
        except BaseException as error:  # surface it in the caller, and free the others
            failures.append(error)
            start.abort()

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]
