"""Run each distinct run once: a schedule whose every answer an earlier run already gave is that run.

A schedule fixes a handful of answers the platform gives while the handler runs: does the n-th
arrival at the fault's boundary fail (its `times`), and may attempt n be retried (n <= its
retries; under SQS, may a message received n times come back). A run asks only some of them.
With one delivery and no retry needed, arrival 2 never comes, so `1,3` asks what `1` asked and
gets the same answers; a run that never fails asks no retry question, so retries 0, 1 and 2 run
the same. Everything else a run depends on is the schedule's family (how the event arrives,
what lands, what is slow), and the virtual clock, the seeded ids and the handler are the same
each time: two schedules that get the same answers to the questions one of them asked make
the same calls in the same order with the same results. The check runs the first, and the
second's result is the first's, under its own name. Nothing is sampled or cut: every schedule
still gets a result, the one its own run would have had.

The runs go in phases, smaller before larger (fewer failing arrivals, then more retries first,
since a run with retries left over answers the one with fewer when it never needed them), so
that the run a schedule can reuse has finished before the schedule's turn.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, Sequence


def family(schedule: Any) -> tuple[Any, ...]:
    """What a schedule fixes besides its answers: how the event arrives, what lands, what is slow."""
    return (schedule.delivery, schedule.copy_at, schedule.overwrite, schedule.second, schedule.slow,
            schedule.sent_twice, schedule.long_name, getattr(schedule, "name", ""),
            getattr(schedule, "timing", None), getattr(schedule, "later", None))


def failing(schedule: Any) -> frozenset[int]:
    """The arrivals the schedule's fault fails (none without a fault)."""
    if schedule.fault is None:
        return frozenset()
    return frozenset(int(part) for part in schedule.fault.times.split(","))


def _fault(schedule: Any) -> tuple[Any, ...]:
    plan = schedule.fault
    return (plan.at, plan.how, plan.outcome, plan.run)


def same_run(schedule: Any, result: Any) -> bool:
    """Would `schedule` run exactly as `result`'s run did? Yes when it is of the same family and
    gives the same answer to every question that run asked: each arrival it reached at a
    boundary where a fault could strike, and each retry it decided."""
    ran = result.schedule
    if family(schedule) != family(ran):
        return False
    if any((n <= schedule.retries) != (n <= ran.retries) for n in result.retries_asked):
        return False
    fired = frozenset(k for k in failing(ran) if k <= result.reached.get(ran.fault.at, 0)) if ran.fault else frozenset()
    if fired:  # the run failed where its fault said: the same fault, failing the same reached arrivals
        if schedule.fault is None or _fault(schedule) != _fault(ran):
            return False
        reached = result.reached.get(ran.fault.at, 0)
        return frozenset(k for k in failing(schedule) if k <= reached) == fired
    if schedule.fault is None:
        return True
    # the run failed nowhere: the schedule's fault must fail none of the arrivals it made there
    return not any(k <= result.reached.get(schedule.fault.at, 0) for k in failing(schedule))


def phases(schedules: Sequence[Any]) -> list[list[int]]:
    """The schedules' indexes in the order they may reuse each other: by how many arrivals fail,
    then most retries first."""
    keys = sorted({(len(failing(s)), -s.retries) for s in schedules})
    return [[i for i, s in enumerate(schedules) if (len(failing(s)), -s.retries) == key] for key in keys]


def run_once(schedules: Sequence[Any], run: Callable[[list[int]], Iterable[Any]]) -> tuple[list[Any], int]:
    """Every schedule's result, in order, running only those no earlier run answers: `run(indexes)`
    runs those schedules and returns their results in the same order. Returns the results and
    how many runs were made."""
    results: list[Any] = [None] * len(schedules)
    done: dict[tuple[Any, ...], list[Any]] = {}
    runs = 0
    for phase in phases(schedules):
        todo = []
        for i in phase:
            twin = next((r for r in done.get(family(schedules[i]), ()) if same_run(schedules[i], r)), None)
            if twin is None:
                todo.append(i)
            else:
                results[i] = replace(twin, schedule=schedules[i], ran_as=twin.schedule)  # twins are runs
        for i, result in zip(todo, run(todo)):
            results[i] = result
            done.setdefault(family(schedules[i]), []).append(result)
        runs += len(todo)
    return results, runs
