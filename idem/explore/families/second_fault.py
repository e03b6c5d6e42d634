"""The family `second_fault`: a fault of the first round, then a read of Stripe's that only that fault led to.

The first round fails one call per schedule, among the calls the clean run made (`build`). Some calls
are made only after a fault: the retry of an attempt that charged and stopped before booking asks
Stripe whether the order was charged (a list or a search of PaymentIntents). A handler that takes a
failed look-up for "not charged" charges again, and that takes two faults in one schedule: the first,
and the look-up's. So after the first round, each of its schedules that reached a read of Stripe's the
clean run never made (its result's `reached`) is run again with that read failing on its first arrival,
as Stripe's SDK fails it (`idem.explore.sandbox.stripe_sdk.read_at_boundary`). The property, from the
domain: a handler that cannot read Stripe has learnt nothing about what Stripe charged.

Not modelled: a second fault at any other call first made after a fault (an AWS call of a retry's).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Sequence

from ...sim.faults import STRIPE_READS, FaultPlan, How, Side

FAMILY = "second_fault"
DESCRIPTION = ("a fault of the other families, then a read of Stripe's that only the fault led to (a retry's "
               "look-up) failing too, on its first arrival")


def new_reads(result: Any, known: set[Any]) -> list[Any]:
    """The reads of Stripe's `result`'s run reached that are not among the clean run's boundaries (`known`)."""
    return [b for b in (result.reached or {}) if b.side is Side.BEFORE and b not in known
            and str(b.call).startswith(STRIPE_READS)]


def schedules(results: Iterable[Any], crossed: Sequence[Any]) -> list[Any]:
    """Each first-round schedule with a fault, again, with each read only it led to failing too; one per read
    and way the first round got there (its fault, delivery, retries and family), in the first round's order."""
    known, found = set(crossed), {}
    for result in results:
        schedule = result.schedule
        if schedule.fault is None:
            continue
        for read in new_reads(result, known):
            plan = schedule.fault
            way = (read, plan.at, plan.how, plan.outcome, plan.run, schedule.retries, schedule.dimension,
                   schedule.delivery, schedule.copy_at, schedule.overwrite, schedule.second)
            found.setdefault(way, replace(schedule, fault=replace(plan, also=FaultPlan(read, "1", How.EXCEPTION))))
    return list(found.values())
