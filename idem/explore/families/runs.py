"""Faults in runs: the same call failing several times in a row, as well as alone.

A fault alone is the faults family (`build.fault_schedules`). Real faults come in runs: a table
throttled for a second throttles every request in it, and a network that lost one answer may lose
the next. Each retry a handler makes meets the next fault of the run:

- **Before a call** (a throttle, after botocore's own attempts): the handler's own retries, the
  same call made again in the same invocation (#n, #n+1, ...), fail 2 or 3 times in a row, or
  every time (`EVERY_CALL`: a retry helper that gives up after any number of tries, or at a
  deadline it keeps on the clock, is seen giving up). A batch call answered with its items
  unprocessed or its entries failed (an HTTP 200) comes 1, 2, 3 and `EVERY` times in a row: boto3's
  batch_writer sends the rest again at once, with no sleep, as long as any is left.
- **After an AWS call** (its answer lost): botocore's own attempts (`idem.sim.sdk_retries`) lose
  their answers 2 times in a row, or every time (the SDK gives up: the handler sees the timeout).
  A run of one is the faults family's lost answer: the resend's own answer comes back. After a
  charge, every attempt of Stripe's SDK (its `max_network_retries`) loses its answer.

Each run starts at the call's first arrival, with one delivery, for each retry setting.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ...sim.platform.batch_partial import PARTIAL_CALLS, UNPROCESSED
from ...sim.faults import CHARGE_CALL, END_CALL, FaultPlan, How, Side
from ...sim.sdk_retries import EVERY

#: Before a call, "every time": every call of the invocation to it, for as long as the invocation goes
#: on. A helper that sleeps between tries moves the check's clock, and meets its own deadline or the
#: function's timeout; one that retries with no sleep at all makes this many calls (a few seconds of
#: the check's time) before one is answered.
EVERY_CALL = 10_000
#: The runs tried before a call (the handler's own retries) and after an AWS call (the SDK's).
BEFORE_RUNS = (2, 3, EVERY_CALL)
AFTER_RUNS = (2, EVERY)
#: A batch call's items unprocessed (HTTP 200): alone, and 2, 3 and EVERY calls in a row.
PARTIAL_RUNS = (1, 2, 3, EVERY)
DESCRIPTION = ("one call failing several times in a row: throttled 2, 3 or every time the handler calls it "
               "again, or its answer lost on 2 or every one of the SDK's own attempts, x retries")


def run_plans(crossed: Sequence[Any]) -> list[FaultPlan]:
    """The runs of faults at the boundaries a clean run crossed."""
    plans = []
    for boundary in dict.fromkeys(crossed):
        if boundary.call == END_CALL:
            continue
        if boundary.side is Side.BEFORE:
            plans += [FaultPlan(boundary, "1", How.EXCEPTION, run=n) for n in BEFORE_RUNS]
            if boundary.call in PARTIAL_CALLS:  # its items unprocessed or entries failed, alone or in a run
                plans += [FaultPlan(boundary, "1", How.EXCEPTION, outcome=UNPROCESSED, run=n)
                          for n in PARTIAL_RUNS]
        elif boundary.call != CHARGE_CALL:
            plans += [FaultPlan(boundary, "1", How.EXCEPTION, run=n) for n in AFTER_RUNS]
        else:  # Stripe's SDK called directly resends too (max_network_retries): every answer lost
            plans.append(FaultPlan(boundary, "1", How.EXCEPTION, run=EVERY))
    return plans


def run_schedules(crossed: Sequence[Any], retries: Iterable[int], schedule: Any) -> list[Any]:
    """The runs family: each run, one delivery, each retry setting (`schedule` is schedule.Schedule)."""
    return [schedule(plan, "single", None, r) for plan in run_plans(crossed) for r in retries]


def describe(plan: Any) -> str:
    """A run in words, for a schedule's label ("" for a fault alone)."""
    run = getattr(plan, "run", 1)
    if run <= 1:
        return ""
    if plan.at.side is Side.AFTER:
        return " and every SDK attempt after it" if run >= EVERY else f" and the SDK's next {run - 1} attempt(s)"
    return " and every time the handler calls it again" if run >= EVERY_CALL else f", {run} calls in a row"
