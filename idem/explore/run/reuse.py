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

The second round (`idem.explore.families.second_fault`) reuses its own runs the same way: its schedules
add a second plan (`FaultPlan.also`) to a first-round schedule's, once per retry setting, and a run
answers another only where both plans are the same, so what differs is the retries alone, and a run
that never asked for the retry it had answers the schedule that has none.
"""
from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Protocol, Sequence


def family(schedule: Any) -> tuple[Any, ...]:
    """What a schedule fixes besides its answers: how the event arrives, what lands (and by which S3 API,
    when not PutObject), what is slow. Its text is the key of the schedule's drawn delays (`timed.drawn`),
    so a schedule uploading by PutObject has the same key as before the API was part of it."""
    found = (schedule.delivery, schedule.copy_at, schedule.overwrite, schedule.second, schedule.slow,
             schedule.sent_twice, schedule.long_name, getattr(schedule, "name", ""),
             getattr(schedule, "timing", None), getattr(schedule, "later", None))
    upload = getattr(schedule, "upload", "")
    return (*found, upload) if upload else found


def failing(schedule: Any) -> frozenset[int]:
    """The arrivals the schedule's fault fails (none without a fault, or with only a second plan)."""
    plan = schedule.fault
    return frozenset() if plan is None or plan.at is None else _arrivals(plan.times)


@functools.cache
def _arrivals(times: str) -> frozenset[int]:
    """`1,3` as {1, 3}: read once per text (a run's reuse asks it tens of thousands of times)."""
    return frozenset(int(part) for part in times.split(","))


def _fault(schedule: Any) -> tuple[Any, ...]:
    plan = schedule.fault
    return (plan.at, plan.how, plan.outcome, plan.run)


def _second(schedule: Any) -> Any:
    """The schedule's second plan (the second round's), None for the first round's."""
    return None if schedule.fault is None else schedule.fault.also


def same_run(schedule: Any, result: Any) -> bool:
    """Would `schedule` run exactly as `result`'s run did? Yes when it is of the same family and
    gives the same answer to every question that run asked: each arrival it reached at a
    boundary where a fault could strike, and each retry it decided."""
    return family(schedule) == family(result.schedule) and _same_answers(schedule, result)


def _same_answers(schedule: Any, result: Any) -> bool:
    """`same_run` for a schedule and a run of one family."""
    ran = result.schedule
    if _second(schedule) != _second(ran):  # a second plan is the run's own, reached or not
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


class Runs(Protocol):
    """Where the schedules run (`idem.explore.run.pool.Dispatch`): `add` hands it schedules that are
    ready, `finished` gives back some that ran, with their results, once they have."""

    def add(self, indexes: list[int], rank: int) -> None: ...

    def finished(self) -> list[tuple[int, Any]]: ...


def run_once(schedules: Sequence[Any], runs: Runs, start: int = 0) -> tuple[list[Any], int]:
    """Every schedule's result, in order, running only those no earlier run answers. Returns the
    results and how many runs were made; from `start` on (the check's second round: the first round's
    are already run, and no run of theirs answers one of it).

    A schedule can only reuse a run of its own family, so each family goes through the phases on
    its own: its next phase is decided once its runs of the phase before have all come back, while
    other families' runs still go on. What is reused is what the phases alone decide (the runs of
    the family's earlier phases, in their order), however the runs are spread over processes."""
    results: list[Any] = [None] * (len(schedules) - start)
    steps: dict[tuple[Any, ...], list[tuple[int, list[int]]]] = {}  # a family's phases: (rank, indexes)
    for rank, phase in enumerate(phases(schedules[start:])):
        mine: dict[tuple[Any, ...], list[int]] = {}
        for i in (start + i for i in phase):
            mine.setdefault(family(schedules[i]), []).append(i)
        for name, indexes in mine.items():
            steps.setdefault(name, []).append((rank, indexes))
    done: dict[tuple[Any, ...], list[Any]] = {name: [] for name in steps}
    running: dict[tuple[Any, ...], dict[int, Any]] = {}  # a family's runs out, in the order they were asked
    made = 0

    def next_runs(name: tuple[Any, ...]) -> None:
        """Decide the family's next phases until one has runs to make; hand those out."""
        nonlocal made
        while steps[name]:
            rank, phase = steps[name].pop(0)
            todo = []
            for i in phase:
                twin = next((r for r in done[name] if _same_answers(schedules[i], r)), None)
                if twin is None:
                    todo.append(i)
                else:
                    results[i - start] = replace(twin, schedule=schedules[i], ran_as=twin.schedule)  # twins are runs
            if todo:
                running[name] = dict.fromkeys(todo)
                made += len(todo)
                runs.add(todo, rank)
                return

    for name in list(steps):
        next_runs(name)
    while running:
        for i, result in runs.finished():
            results[i - start] = result
            name = family(schedules[i])
            running[name][i] = result
            if all(r is not None for r in running[name].values()):
                done[name].extend(running.pop(name).values())
                next_runs(name)
    return results, made


def run_every(schedules: Sequence[Any], runs: Runs, start: int = 0) -> tuple[list[Any], int]:
    """Every schedule's result from its own run (none reused), in order, and how many runs were made;
    from `start` on (the check's second round: the first round's are already run)."""
    results: list[Any] = [None] * (len(schedules) - start)
    runs.add(list(range(start, len(schedules))), 0)
    left = len(results)
    while left:
        for i, result in runs.finished():
            results[i - start] = result
            left -= 1
    return results, len(results)
