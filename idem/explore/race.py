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
read back in one pass at the end, with every invocation's own outcome (`RaceReport.outcomes`):
a charge that went missing shows as an invocation that failed, or one that never ran.

Which thread gets where first is the scheduler's choice, so a handler race proves only what
holds whatever the order (one charge for keyed, one per racer for naive). `hold_first=True`
forces the order that shows a concurrency hole every round instead of now and then: racer 0
runs alone up to its charge call and holds it there; the others start only then, and racer 0
makes its charge once every other racer has finished (the runtime's `before_charge`
concurrent copy, on real threads).
"""
from __future__ import annotations

import itertools
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..core.dynamo import to_item
from ..core.patterns import HANDLERS
from ..core.ledger import Ledger
from ..sim.world import LocalWorld
from ..core import entry
from ..console import fold_report
from ..sim.sessions import watched_session
from ..sim.runtime import LambdaContext

CLAIM_STRATEGIES = ("conditional_put", "read_then_write")
STRATEGIES = CLAIM_STRATEGIES + tuple(HANDLERS)
OK = "ok"
NOT_RUN = "NotRun: the invocation never ran"
RACE_TIMEOUT = 30.0  # the racers' Lambda timeout, in virtual seconds (nobody's lease ends)


@dataclass(frozen=True)
class RaceReport:
    strategy: str
    threads: int
    rounds: int
    winners_per_round: tuple[int, ...]
    errors: int = 0  # invocations that raised (e.g. keyed's WorkInProgress for the losers)
    #: every invocation's outcome, round by round, thread by thread: "ok", or the error's type
    #: and message ("WorkInProgress: ..."), or NOT_RUN for one that never ran (a handler race)
    outcomes: tuple[tuple[str, ...], ...] = ()

    def failures(self) -> dict[str, int]:
        """How many invocations ended each way other than "ok", by error type."""
        counted: dict[str, int] = {}
        for outcome in (o for row in self.outcomes for o in row if o != OK):
            kind = outcome.split(":", 1)[0]
            counted[kind] = counted.get(kind, 0) + 1
        return counted

    @property
    def clean_rounds(self) -> int:
        """Rounds with exactly one winner."""
        return sum(1 for w in self.winners_per_round if w == 1)

    def summary(self) -> str:
        worst = max(self.winners_per_round, default=0)
        what = "charge" if self.strategy in HANDLERS else "winner"  # handlers: charges are the winners
        failed = ", ".join(f"{kind} x{n}" for kind, n in sorted(self.failures().items()))
        return fold_report(f"{self.strategy}: {self.clean_rounds} of {self.rounds} rounds had exactly one "
                           f"{what} among {self.threads} threads (most {what}s in a round: {worst})"
                           + (f"; invocations that did not end ok: {failed}" if failed else ""))


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
         world: LocalWorld | None = None, switch: float | None = 1e-6,
         hold_first: bool = False) -> RaceReport:
    """Race `threads` real threads, `rounds` times; count the winners of each round.
    `hold_first` (handlers only): every round, the others run while racer 0 holds its charge."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if threads < 2 or rounds < 1:
        raise ValueError("a race needs at least 2 threads and 1 round")
    if hold_first and strategy in CLAIM_STRATEGIES:
        raise ValueError("hold_first holds a handler's charge: race a handler, not a bare claim")
    own_world = world is None
    world = world or LocalWorld(prefix="race")
    try:
        with switch_interval(switch):
            if strategy in CLAIM_STRATEGIES:
                return _race_claims(world, threads, rounds, strategy)
            return _race_handler(world, threads, rounds, strategy, hold_first)
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


class _FirstHolds:
    """One round of `hold_first`: racer 0 alone up to its charge, then the others, then its charge."""

    def __init__(self, others: int) -> None:
        self.at_charge = threading.Event()  # racer 0 is at its charge (or will never get there)
        self.others_done = threading.Event()  # every other racer has finished its invocation
        self._left, self._lock = others, threading.Lock()

    def other_finished(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self.others_done.set()


class _HeldProvider:
    """Racer 0's provider client under `hold_first`: its first charge of a round waits there
    until every other racer has finished; everything else goes straight to the provider."""

    def __init__(self, inner: Any, hold: Callable[[], _FirstHolds]) -> None:
        self.inner, self.hold = inner, hold

    def charge(self, *args: Any, **kwargs: Any) -> Any:
        hold = self.hold()
        if not hold.at_charge.is_set():
            hold.at_charge.set()
            hold.others_done.wait()
        return self.inner.charge(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _race_handler(world: LocalWorld, threads: int, rounds: int, handler: str,
                  hold_first: bool = False) -> RaceReport:
    tokens, token_lock = itertools.count(1), threading.Lock()

    def new_token() -> str:
        with token_lock:
            return f"racer-{next(tokens)}"

    holds = [_FirstHolds(threads - 1) for _ in range(rounds)] if hold_first else []
    first_round = [0]  # the round racer 0 is in (only racer 0's provider reads it)
    providers: list[Any] = [world.provider() for _ in range(threads)]
    if hold_first:
        providers[0] = _HeldProvider(providers[0], lambda: holds[first_round[0]])
    env = world.env(handler)
    apps = [entry.App.from_environment(env, session=watched_session(), clock=world.clock,
                                       provider=provider, new_token=new_token, log=lambda _: None)
            for provider in providers]
    objects = [world.upload(f"racer/round-{n:05d}.csv") for n in range(rounds)]
    events = [world.event(obj) for obj in objects]
    outcomes = [[NOT_RUN] * threads for _ in range(rounds)]

    def work(index: int, round_number: int) -> None:
        hold = holds[round_number] if hold_first else None
        if hold is not None:
            if index == 0:
                first_round[0] = round_number
            else:
                hold.at_charge.wait()  # set by racer 0 at its charge, or when it ends without one
        context = LambdaContext(f"round-{round_number}-thread-{index}", "idem-race",
                                world.clock.now() + RACE_TIMEOUT, world.clock)
        try:
            apps[index].handle(events[round_number], context)
        except Exception as error:  # a loser told to retry later: Lambda would; kept, and counted
            outcomes[round_number][index] = f"{type(error).__name__}: {error}"
        else:
            outcomes[round_number][index] = OK
        finally:
            if hold is not None:
                if index == 0:
                    hold.at_charge.set()  # it never reached a charge: the others go now
                else:
                    hold.other_finished()

    run_rounds(threads, rounds, work)
    charged: dict[str, int] = {}
    for charge in world.provider().charges():
        charged[charge.reference.split("?")[0]] = charged.get(charge.reference.split("?")[0], 0) + 1
    return RaceReport(handler, threads, rounds, tuple(charged.get(o.uri.split("?")[0], 0) for o in objects),
                      errors=sum(o != OK for row in outcomes for o in row),
                      outcomes=tuple(map(tuple, outcomes)))


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
