"""Batches of schedules, and the processes that run them: `workers` > 1 runs each phase's batches
in a pool of that many processes, each keeping its world between batches (`worlds`)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from ...sim.world import ensure_moto
from ..errors import CheckCouldNotFinish, CheckInputError, as_tool_errors
from ..families.schedule import Schedule
from ..judge.result import Result
from . import runner

BATCH = 20  # schedules per batch at most (`in_batches`)
BATCH_SMALLEST = 4
BATCH_SHARE = 2  # a batch takes 1 / (BATCH_SHARE x processes) of what its phase has left


def in_batches(schedules: Sequence[Schedule], indexes: Sequence[int], workers: int) -> list[list[int]]:
    """The schedules to run, in batches of one bucket (versioned or unversioned, one or the other),
    each of BATCH_SMALLEST to BATCH schedules, largest first: a batch takes about a share of what
    is left of the phase (1 / (BATCH_SHARE x processes)), so the phase ends on small batches and
    the processes finish it together (the next phase waits for the last). Batches cost no world
    each (`idem.explore.run.worlds`)."""
    parts = [[i for i in indexes if (schedules[i].overwrite != "unversioned") == versioned]
             for versioned in (True, False)]
    left, found = sum(len(part) for part in parts), []
    for part in parts:
        start = 0
        while start < len(part):
            size = max(BATCH_SMALLEST, min(BATCH, -(-left // (BATCH_SHARE * max(1, workers)))))
            found.append(part[start:start + size])
            start += size
            left -= len(found[-1])
    return found


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


def run_batches(args: Sequence[tuple[Any, ...]], pool: Any) -> list[list[Result]]:
    """run_batch on each argument tuple, in `pool`'s processes when there is a pool."""
    if pool is None or len(args) <= 1:
        return [runner.run_batch(*a) for a in args]
    parts = pool.starmap(_run_batch_in_worker, args, chunksize=1)  # an even finish
    for part in parts:
        for failed in part:
            if isinstance(failed, _Failed):
                failed.raise_it()
    return parts


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
