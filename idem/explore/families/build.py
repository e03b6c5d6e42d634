"""The families of schedules `idem check` runs, built from the boundaries a clean run crossed:
faults, overwrite and slow here; the families of time and accounts (`timed`, `sqs_timed`), the
runs (`runs`) and the names (`key_decoding`) from their own modules."""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

from ...sim.faults import CHARGE_CALL, END, FaultPlan, How, PROVIDER_POINTS, SDK_POINTS, Side
from . import key_decoding, runs, second_fault, sqs_timed, timed, timings, upload_kinds
from .schedule import ARRIVALS, RETRIES, SECONDS, VERSIONING, Schedule

#: The families of schedules, as the report counts them.
DIMENSIONS = {
    "faults": "faults at every boundary x deliveries (once, twice, a copy at each boundary) x retries",
    "overwrite": "a second upload of the same name (a second order, or the uploader's retried PUT of the same "
                 "bytes; versioned and unversioned bucket), after the first, while it is at each boundary (no "
                 "fault), or between a failed attempt and its retry (a fault at each boundary), x retries",
    "slow": "one slow call (in flight until 1 s before the timeout, request or answer side) with a copy "
            "started meanwhile, or alone, no fault, x retries",
    **timed.DIMENSIONS,
    **timed.ZONES,
    "runs": runs.DESCRIPTION,
    upload_kinds.FAMILY: upload_kinds.DESCRIPTION,
    key_decoding.FAMILY: key_decoding.DESCRIPTION,
    second_fault.FAMILY: second_fault.DESCRIPTION,
}


def fault_places(crossed: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Where an exception can strike (every boundary) and where a crash can (a crash before a
    call is the same as one after the call before it: nothing outside changes in between)."""
    return list(crossed), copy_places(crossed)  # the same places a concurrent copy can start


def copy_places(crossed: Sequence[Any]) -> list[Any]:
    """Where a concurrent copy can start: before the first call and after each call."""
    calls = [b for b in crossed if b != END]
    return ([calls[0]] if calls else []) + [b for b in calls if b.side is Side.AFTER] or [END]


def schedules_for(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                  overwrite: Iterable[str] = VERSIONING, trigger: str = "s3", sdk: bool = False,
                  failure_retention: float = timings.RETENTION_DEFAULT, names_customer: bool = False) -> list[Schedule]:
    """Every distinct schedule over the boundaries a clean run crossed: the faults dimension
    (exhaustive, as described in the module docstring), then the two bounded ones
    (`overwrite_schedules`, `slow_schedules`). `sdk`: the handler calls Stripe's SDK itself."""
    retries = tuple(retries)
    return timed.drawn(fault_schedules(crossed, retries, sdk) + overwrite_schedules(crossed, retries, overwrite)
                       + slow_schedules(crossed, retries) + runs.run_schedules(crossed, retries, Schedule)) + timed.schedules(
        Schedule, crossed, retries, fault_places(crossed)[0], copy_places(crossed), trigger, failure_retention,
        names_customer)


def fault_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                    sdk: bool = False) -> list[Schedule]:
    """Every fault on any set of arrivals, for every delivery of one upload and retry setting.
    `sdk`: the handler calls Stripe's SDK itself, so Stripe can answer 429 or need the card's holder too."""
    exception_at, crash_at = fault_places(crossed)
    faults = [(How.EXCEPTION, b) for b in exception_at] + [(How.CRASH, b) for b in crash_at]
    # the provider's own answers at each charge call: down, a saved 500, a 409, a decline
    # (and, to Stripe's SDK, a 429 and a card that needs authentication)
    outcomes = PROVIDER_POINTS + (SDK_POINTS if sdk else ())
    faults += [(outcome, b) for b in crossed if b.call == CHARGE_CALL and b.side is Side.BEFORE
               for outcome in outcomes]
    order = {b: n for n, b in enumerate(crossed)}
    deliveries = [("single", None), ("duplicate", None)] + [("concurrent", b) for b in copy_places(crossed)]
    found = []
    for (delivery, copy_at), r in itertools.product(deliveries, retries):
        found.append(Schedule(None, delivery, copy_at, r))
        reach = (1 if delivery == "single" else 2) * (r + 1)
        for (how, at), n in itertools.product(faults, (1, 2, 3)):
            for arrivals in itertools.combinations(ARRIVALS, n):
                if max(arrivals) > reach:
                    continue  # an arrival that cannot happen: another schedule's twin
                if copy_at is not None and 1 in arrivals and order[at] < order[copy_at]:
                    continue  # the first invocation fails before the copy would start
                times = ",".join(map(str, arrivals))
                plan = (FaultPlan(at, times, How.EXCEPTION, outcome=how) if how in outcomes
                        else FaultPlan(at, times, how))
                found.append(Schedule(plan, delivery, copy_at, r))
    return found


def sqs_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                  retention: float = timings.RETENTION_DEFAULT, sdk: bool = False,
                  dead_letter_retention: float = 0.0, names_customer: bool = False) -> list[Schedule]:
    """The schedules under --trigger sqs. Each batch already carries two uploads, one message
    each, so the s3 families of overwrite and slow schedules are not run (SqsFedLambda has no
    call in flight); instead: the faults, S3 sending a notification twice, and the uploader's
    retried PUT of the first order (same name, same bytes: the same order, a new version,
    request id and sequencer), whose own notification is a second message (S3 notifies each
    PUT: https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html) that
    arrives after the first's message is done, or in the same batch. Judged per order: the
    retried PUT's charges count for the first order (the same name), which must be charged
    as often as in the clean run. A versioned bucket only: a handler keyed by versionId is then told apart
    from one keyed by the order (in an unversioned bucket every versionId is "null"). Then the runs, and
    the families of time and accounts as SQS has them (`idem.explore.families.sqs_timed`), within the source
    queue's `retention` period (with Bob's file naming Alice's customer where `names_customer`)."""
    retries, least = tuple(retries), min(retries)
    found = fault_schedules(crossed, retries, sdk) + [Schedule(None, "single", None, r, sent_twice=True) for r in retries]
    found += [Schedule(None, d, None, least, overwrite="versioned", second="retried_put") for d in ("single", "same_batch")]
    return timed.drawn(found + runs.run_schedules(crossed, retries, Schedule)) + sqs_timed.schedules(
        Schedule, retries, fault_places(crossed)[0], copy_places(crossed), retention, dead_letter_retention,
        names_customer)


def overwrite_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                        versioning: Iterable[str] = VERSIONING) -> list[Schedule]:
    """Two uploads of one name, each a second order or the uploader's retried PUT (docs/one_charge_per_order.md): the
    second arrives after the first is done, or while the first invocation sits at any place a
    copy can start (no fault is added: a key that takes the second upload for the first shows
    without one), or between the first's failed attempt and Lambda's retry, after an exception or
    a crash at any boundary on the first arrival (a retry that reads the name's latest version, or
    starts over with a fresh key, shows there)."""
    places = [("duplicate", None)] + [("concurrent", b) for b in copy_places(crossed)]
    exception_at, crash_at = fault_places(crossed)
    failing = [FaultPlan(b, "1", How.EXCEPTION) for b in exception_at] + [FaultPlan(b, "1", How.CRASH)
                                                                          for b in crash_at]
    found = [Schedule(None, delivery, at, r, overwrite=kind, second=second)
             for kind in versioning for second in SECONDS for (delivery, at) in places for r in retries]
    # a second order at the longest name S3 allows, after the first is done: a key cut to fit the
    # provider's 255 characters (not hashed) loses what tells the two orders apart
    found += [Schedule(None, "duplicate", None, r, overwrite=kind, second="order", long_name=True)
              for kind in versioning for r in retries]
    found += [Schedule(plan, "between", None, r, overwrite=kind, second=second)
              for kind in versioning for second in SECONDS for plan in failing for r in retries if r]
    return found


def slow_places(crossed: Sequence[Any]) -> list[Any]:
    """Where a call can be slow: each call's request side (sent, being worked on) and its answer
    side (done, the answer on the way)."""
    return [b for b in crossed if b != END]


def slow_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES) -> list[Schedule]:
    """One call of the first invocation is slow, and a copy of the event starts while it is in
    flight, or (`single`) no copy comes at all. Bounded: no fault is added, and the call takes as
    long as it can (until 1 s before the timeout): the copy arrives as late as the invocation allows,
    so any lease or TTL shorter than the invocation has run out by then. Alone, the slow call leaves
    the invocation with under a second (`context.get_remaining_time_in_millis()`): a handler that
    then returns without its work, trusting "it will come again", is seen losing it (a returned
    asynchronous invocation is a success, never retried:
    https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html); a copy
    meanwhile would do the work and hide it."""
    return [Schedule(None, delivery, b, r, slow=True) for b in slow_places(crossed) for r in retries
            for delivery in ("concurrent", "single")]
