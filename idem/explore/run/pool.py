"""Batches of schedules, and the processes that run them: `workers` > 1 runs the batches in a pool of
that many processes, each keeping its world between batches (`worlds`), as they become ready (`Dispatch`)."""
from __future__ import annotations

import contextlib
import heapq
import queue
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ...sim.world import ensure_moto
from ..errors import CheckCouldNotFinish, CheckInputError, as_tool_errors
from ..families.schedule import Schedule
from ..judge.result import Result
from . import runner

BATCH = 20  # schedules per batch at most
BATCH_SMALLEST = 4  # and at least, while as many are ready
BATCH_SHARE = 2  # a batch takes 1 / (BATCH_SHARE x processes) of the schedules ready
AHEAD = 1  # batches handed to the pool beyond one per process: a process never waits for the next


class Dispatch:
    """Schedules run as they become ready (`idem.explore.run.reuse.Runs`): in batches of one bucket
    (versioned or unversioned), to the pool's processes while earlier batches still run, so none
    waits for another's last batch; with no pool, one batch at a time in this process. A batch
    takes about a share of what is ready (1 / (BATCH_SHARE x processes)), BATCH_SMALLEST to BATCH
    schedules, lowest rank first. Which process runs which schedule, and with which others, changes
    nothing in its result (`idem.explore.run.worlds`)."""

    def __init__(self, schedules: Sequence[Schedule], pool: Any, workers: int,
                 args_of: Callable[[list[int]], tuple[Any, ...]]) -> None:
        self.schedules, self.pool, self.workers, self.args_of = schedules, pool, max(1, workers), args_of
        self.ready: list[tuple[int, int]] = []  # (rank, index), a heap
        self.out = 0  # batches handed to the pool and not back yet
        self.back: queue.SimpleQueue[tuple[list[int], Any]] = queue.SimpleQueue()

    def add(self, indexes: list[int], rank: int) -> None:
        """Schedules ready to run, of one phase (`rank`: lower runs first)."""
        for i in indexes:
            heapq.heappush(self.ready, (rank, i))
        self._hand_out()

    def _hand_out(self) -> None:
        """Batches to the pool, while a process has none waiting."""
        if self.pool is not None:
            while self.ready and self.out < self.workers + AHEAD:
                batch = self._next_batch()
                self.pool.apply_async(_run_batch_in_worker, self.args_of(batch),
                                      callback=lambda part, batch=batch: self.back.put((batch, part)),
                                      error_callback=lambda error, batch=batch: self.back.put((batch, error)))
                self.out += 1

    def finished(self) -> list[tuple[int, Result]]:
        """The schedules of the next batch to end, with their results (raised: why it could not)."""
        if self.pool is None:
            batch = self._next_batch()
            return list(zip(batch, runner.run_batch(*self.args_of(batch))))
        self._hand_out()
        batch, part = self.back.get()
        self.out -= 1
        if isinstance(part, BaseException):
            raise part
        for failed in part:
            if isinstance(failed, _Failed):
                failed.raise_it()
        return list(zip(batch, part))

    def _next_batch(self) -> list[int]:
        """The lowest-ranked ready schedule, and as many more ready in its kind of bucket as a batch takes."""
        versioned = self._versioned(self.ready[0][1])
        size = max(BATCH_SMALLEST, min(BATCH, -(-len(self.ready) // (BATCH_SHARE * self.workers))))
        batch: list[int] = []
        other: list[tuple[int, int]] = []  # ready, in the other kind of bucket: left for a later batch
        while self.ready and len(batch) < size:
            rank, i = heapq.heappop(self.ready)
            if self._versioned(i) == versioned:
                batch.append(i)
            else:
                other.append((rank, i))
        for item in other:
            heapq.heappush(self.ready, item)
        return batch

    def _versioned(self, index: int) -> bool:
        return self.schedules[index].overwrite != "unversioned"


@contextlib.contextmanager
def processes(workers: int) -> Iterator[Any]:
    """`workers` processes for every phase of the check, or None for one (this process).
    Meanwhile what the process holds already (its modules, botocore's models, moto's classes,
    the clean run's findings) is left out of garbage collection (`frozen`), in the workers too."""
    with frozen():
        if workers <= 1:
            yield None
            return
        import multiprocessing

        # fork where the platform has it: the workers start with moto and botocore's models
        # already loaded (a spawned worker spends seconds importing them); spawn elsewhere.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with multiprocessing.get_context(method).Pool(workers) as pool:
            yield pool


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """While it lasts, the objects alive now are not examined by the garbage collector
    (`gc.freeze`): a full collection walked them all, about half a million objects, and found
    nothing to free, each time (about 0.4 s of a worker's time, measured here). What the
    schedules make is collected as before. Put back afterwards (`gc.unfreeze`)."""
    import gc

    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass
class _Failed:
    """A worker's batch that could not finish, carried back to be raised in the parent."""

    exit_code: int
    message: str
    handler_traceback: str = ""

    def raise_it(self) -> None:
        kind = CheckCouldNotFinish if self.exit_code == 3 else CheckInputError
        raise kind(self.message, self.handler_traceback)


def _run_batch_in_worker(*args: Any) -> list[Any]:
    ensure_moto()
    try:
        with as_tool_errors():
            results = runner.run_batch(*args)
    except CheckInputError as error:
        return [_Failed(error.exit_code, str(error), error.handler_traceback)]
    for attempt in (a for r in results for a in r.attempts):  # what a person reads survives the trip
        attempt.result = None  # back; the runtime's objects need not
    return results
