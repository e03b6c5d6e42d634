"""`idem check`: run any Lambda handler through every schedule the platform can produce for one upload.

    from idem.explore.check import check_handler
    report = check_handler("my_function:lambda_handler", effects=["sqs:SendMessage"])
    assert report.holds, report.explain()

The handler is an ordinary `(event, context)` function that uses boto3, and a payment
provider client it builds with a factory function (`make_provider` by default) that the
check replaces with the workbook's provider stand-in. Nothing in it needs to know it is
being checked: faults happen at its calls (see `idem.sim.boundary`).

How it works:
1. One clean run discovers the boundaries the handler reaches: every AWS call and
   provider call it makes, in order, and the moment it returns.
2. Every schedule is then built from them, in three families (DIMENSIONS):
   - faults, exhaustive: a fault (an exception before or after a call, the process dying,
     or the provider's own answers) on any set of arrivals, S3 delivering the event once,
     twice, or a second copy while the first invocation sits at any boundary, and Lambda
     retrying 0-2 times. Schedules that can only be another schedule's twin are left out.
   - overwrite, bounded: a second upload of the same name, either a second order (new bytes)
     or the uploader's retried PUT of the same order (the same bytes: a new version, request id
     and sequencer, the same eTag), in a versioned and an unversioned bucket, after the first,
     while the first invocation sits at any boundary (no fault), or between the first's failed
     attempt and Lambda's retry (an exception or a crash at any boundary), for each retry
     setting; and a second order at a name of S3's longest (1,024 bytes);
   - slow, bounded: one call of the first invocation stays in flight until 1 s before its
     deadline (request side or answer side) and a copy of the event starts meanwhile, with
     no fault, for each retry setting. Time passes: every clock the handler reads moves.
   - late, retry_ends, again and accounts: time and accounts (`idem.explore.timed`); every delay is
     drawn from its documented range, on a clock that starts at 23:58 UTC (`idem.explore.timings`).
   - runs, bounded: one call failing several times in a row (`idem.explore.runs`). A lost answer
     after an AWS call is resent by botocore as the handler's client is configured, and the
     handler gets the resend's answer (`idem.sim.sdk_retries`); so is a charge sent with Stripe's SDK.
   - names: the clean run's upload at names that need URL-decoding (`idem.explore.key_decoding`).
   Every upload is an order file (`order_body`), at a plain name, and its event carries what
   S3 sends: its own request id and x-amz-id-2, eTag, sequencer and
   version (`triggers.event_for`); every copy of one event is that same event.
3. Each schedule runs in the local runtime, on moto and a virtual clock. Each invocation runs in
   a thread of its own, so a crash is a kill (no except, finally or atexit of the handler runs:
   `idem.sim.runtime.invocation_thread._Run`); calls from the handler's own threads and asyncio tasks are its
   boundaries; time.sleep moves the clock, and a wait past the deadline is Lambda's timeout. Its effects are
   counted where they land: the charges in the provider's own record, the ledger lines in the
   handler's table (the books), and any AWS call named as an effect; a write named as an effect
   (DynamoDB PutItem ..., S3 PutObject ...) is judged by the state it leaves, against the clean
   run's (`idem.explore.state`: the same item again is not a second effect). Money is judged per upload
   against the books (`idem.explore.verdicts`): two charges, no charge, a charge with no line,
   a line with no charge, each named; with nothing in the failure queue, a silent break. Per
   ORDER (ORDERS.md): the charges and lines of an order's uploads must EQUAL the clean run's.
   The clean run is judged too: one that fails, or books other than one line per charge, is the
   report (exit 1, with its timeline).

Exit codes of `python -m idem check`: 0 when nothing breaks, 1 when something does (the clean
run included), 2 for bad input (a module that is missing, a name that is not callable).
"""
from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..core.errors import IdemError
from .verdicts import BOOKS as LINES, BREAKS, MONEY, Verdict, judge_upload, judge_uploads
from ..sim.faults import CHARGE_CALL, END, FaultPlan, How, PROVIDER_POINTS, Side
from ..sim.sessions import release_handler_threads
from ..sim.runtime import (HandlerExited, HandlerNotLoaded, LocalLambda, ScheduleTimedOut, loopback_only,
                           on_clock, schedule_deadline, work_of)
from ..core.clock import VirtualClock
from ..sim.fastload import fewer_collections
from ..sim.runtime.handler_guard import missing_setting, no_subprocesses
from ..sim.writes import count_same_effects_once
from ..sim.world import empty_queue, ensure_moto, pk_text
from ..sim.stripe.server import loopback_stripe
from . import (accounts, books as books_per_charge, family_choice, key_decoding, object_schedules, reuse, runs,
               sqs_timed, state as states, timed, timings, triggers, worlds)
from .deployed import Deployed

HELP = "check any Lambda handler against every schedule of faults and deliveries"
#: The workbook's own patterns, checked through the real entry point.
PATTERNS = ("naive", "claim_first", "robust", "keyed")
PATTERN_ENTRY = "idem.core.entry:lambda_handler"
CHARGES = MONEY
#: The version of `CheckReport.to_json`'s shape (docs/check-report.schema.json).
SCHEMA_VERSION = 3
#: Real seconds one schedule may run before the check gives up on it (exit 3).
SCHEDULE_SECONDS = 60.0  # a schedule takes well under a second; 60 s keeps a loaded CI machine from exit 3
VERDICTS = tuple(v.value for v in Verdict)
RETRIES = (0, 1, 2)
#: What the handler's provider factory returns: the stand-in, or Stripe's SDK over a loopback Stripe.
PROVIDERS = ("stand-in", "stripe")
ARRIVALS = (1, 2, 3)
#: The buckets a second upload of the same name is tried in (Schedule.overwrite).
VERSIONING = ("versioned", "unversioned")
#: What a second upload of the same name is (Schedule.second).
SECONDS = ("order", "retried_put")
CLEAN_RUN = 99_999  # the clean run's upload number
BATCH = 20  # schedules per batch at most (`_batches`)
BATCH_SMALLEST = 4
BATCH_SHARE = 2  # a batch takes 1 / (BATCH_SHARE x processes) of what its phase has left


class CheckInputError(IdemError, ValueError):
    """The check cannot start: say what was wrong and what to do (exit 2). `handler_traceback`
    is the handler's own traceback, when its code is what failed."""

    exit_code = 2

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


class CleanRunBreaks(Exception):
    """The clean run (no fault, one delivery) is already wrong: it fails, or its books disagree with
    its money. That is the report (exit 1, with the clean run's timeline), not bad input."""

    def __init__(self, result: "Result") -> None:
        super().__init__("; ".join(result.findings))
        self.result = result


class CheckCouldNotFinish(CheckInputError):
    """The check could not finish (exit 3): the handler hung past every bound, ended the
    process, or did what the local runtime cannot model (a call to the internet)."""

    exit_code = 3


# -- what to check ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A handler to check: `module:function`, a module by dotted name or a .py file."""

    module: str  # what the runtime loads: a dotted name, or the file's absolute path
    function: str
    env: tuple[tuple[str, str], ...] = ()
    given: str = ""  # the target as the reader named it, for what the report prints
    provider: str = "stand-in"  # what its provider factory returns: one of PROVIDERS
    deployed: Any = None  # its settings as its template deploys it (`idem.explore.deployed.Deployed`)

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def name(self) -> str:
        return self.given or self.spec


def resolve(target: str, env: dict[str, str] | None = None) -> Target:
    """The handler named by `target`, checked for existence before anything runs."""
    env, given = dict(env or {}), target
    if target in PATTERNS:
        env.setdefault("HANDLER_MODE", target)
        target = PATTERN_ENTRY
    module, sep, function = target.rpartition(":")
    if not sep or not module or not function:
        raise CheckInputError(f"{target!r} is not MODULE:FUNCTION (for example my_function:lambda_handler, "
                              f"or one of {', '.join(PATTERNS)})")
    if module.endswith(".py"):
        if not Path(module).is_file():
            raise CheckInputError(f"no file {module}: give the path to your handler's .py file")
        module = str(Path(module).resolve())
        spec = importlib.util.spec_from_file_location(Path(module).stem, module)
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as error:
            raise CheckInputError(f"cannot find module {module}: {error}") from None
        if spec is None:
            raise CheckInputError(f"cannot find module {module}: is it on PYTHONPATH (run from its folder)?")
    source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    if f"def {function}(" not in source and f"{function} =" not in source:
        raise CheckInputError(f"{module} defines no {function}: name the function Lambda calls "
                              "(its Handler setting, e.g. lambda_handler)")
    return Target(module, function, tuple(sorted(env.items())), given)


# -- the schedules -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    """One way the platform can treat one upload (or, with `overwrite`, two uploads of one name)."""

    fault: Any = None  # a FaultPlan, or None for no fault
    delivery: str = "single"  # single, duplicate, concurrent, between or same_batch (see `second`)
    copy_at: Any = None  # where the first invocation is when a concurrent copy starts
    retries: int = 2
    #: the call at `copy_at` is slow: in flight until 1 s before the invocation's deadline, and
    #: the copy starts while it is (LocalLambda.in_flight)
    slow: bool = False
    #: "", or a second upload of the same name: "versioned" (a new version) or "unversioned" (the
    #: same key, a new eTag and sequencer). It is what `delivery` delivers instead of a copy;
    #: `delivery` "between": it lands after the first invocation failed, before Lambda's retry;
    #: "same_batch" (--trigger sqs): its message is in the first upload's batch.
    overwrite: str = ""
    #: what the second upload is (with `overwrite`): "order", a second order at the same name (a
    #: new order_id, new bytes: it gets its own charge), or "retried_put", the uploader's retried
    #: PUT of the same bytes (the same order: no charge beyond the clean run's). See ORDERS.md.
    second: str = "order"
    #: under --trigger sqs: S3 delivered the notification twice, two messages with two ids
    sent_twice: bool = False
    #: the upload's name is as long as S3 allows (1,024 bytes of UTF-8: `triggers.object_name`)
    long_name: bool = False
    name: str = ""  # the family `names`: the upload's file name, one that needs URL-decoding (key_decoding)
    timing: Any = None  # where in its documented range each delay falls (idem.explore.timings; None: low ends)
    later: Any = None  # a schedule of the families where time and accounts matter (idem.explore.timed.Later)

    def label(self) -> str:
        fault = "no fault" if self.fault is None else (
            f"the provider answers {self.fault.outcome} {self.fault.at} on arrival {self.fault.times}"
            if self.fault.outcome else f"{self.fault.how} {self.fault.at} on arrival {self.fault.times}"
            + runs.describe(self.fault))
        if self.later is not None:
            delivery = self.later.label(self.timing, self.copy_at)
        elif self.overwrite:
            what = ("the uploader's retried PUT (same bytes)" if self.second == "retried_put"
                    else "a second order at the same name")
            second = f"{what} ({'new version' if self.overwrite == 'versioned' else 'unversioned: new sequencer'})"
            if self.long_name:
                second += " at a name of 1,024 bytes"
            delivery = (f"{second}, while the first is {self.copy_at}" if self.delivery == "concurrent"
                        else f"{second}, between the first's failed attempt and its retry"
                        if self.delivery == "between"
                        else f"{second}, its message in the same batch as the first's"
                        if self.delivery == "same_batch" else f"{second}, after the first is done")
        elif self.slow:
            call = f"{self.copy_at.call}{f' #{self.copy_at.nth}' if self.copy_at.nth > 1 else ''}"
            side = "request" if self.copy_at.side is Side.BEFORE else "answer"
            delivery = f"slow {call} (its {side} in flight until 1 s before the timeout), a copy meanwhile"
        elif self.sent_twice:
            delivery = "S3 sent the notification twice (two messages, two message ids)"
        else:
            delivery = f"a copy starts {self.copy_at}" if self.delivery == "concurrent" else self.delivery
        delivery += f", {key_decoding.label(self.name)}" if self.name else ""
        return f"{fault}; {delivery}; {self.retries} {'retry' if self.retries == 1 else 'retries'}"

    @property
    def dimension(self) -> str:
        """Which family of schedules this one belongs to (DIMENSIONS)."""
        return (self.later.kind if self.later else "overwrite" if self.overwrite else "slow" if self.slow
                else key_decoding.FAMILY if self.name else "runs" if getattr(self.fault, "run", 1) > 1 else "faults")

    @property
    def size(self) -> tuple[int, ...]:
        """Smaller schedules are easier to read: fewer copies, retries and failing arrivals."""
        arrivals = 0 if self.fault is None else len(self.fault.times.split(",")) + min(self.fault.run, 4) - 1
        return ({"single": 0, "duplicate": 1, "concurrent": 2, "between": 2, "same_batch": 1}[self.delivery] + 2 * self.slow
                + bool(self.overwrite) + self.sent_twice + self.long_name + bool(self.later) + bool(self.name), self.retries, arrivals)


#: The families of schedules, as the report counts them.
DIMENSIONS = {
    "faults": "faults at every boundary x deliveries (once, twice, a copy at each boundary) x retries",
    "overwrite": "a second upload of the same name (a second order, or the uploader's retried PUT of the same "
                 "bytes; versioned and unversioned bucket), after the first, while it is at each boundary (no "
                 "fault), or between a failed attempt and its retry (a fault at each boundary), x retries",
    "slow": "one slow call (in flight until 1 s before the timeout, request or answer side) with a copy "
            "started meanwhile, no fault, x retries",
    **timed.DIMENSIONS,
    "runs": runs.DESCRIPTION,
    key_decoding.FAMILY: key_decoding.DESCRIPTION,
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
                  overwrite: Iterable[str] = VERSIONING, trigger: str = "s3") -> list[Schedule]:
    """Every distinct schedule over the boundaries a clean run crossed: the faults dimension
    (exhaustive, as described in the module docstring), then the two bounded ones
    (`overwrite_schedules`, `slow_schedules`)."""
    retries = tuple(retries)
    return timed.drawn(fault_schedules(crossed, retries) + overwrite_schedules(crossed, retries, overwrite)
                       + slow_schedules(crossed, retries) + runs.run_schedules(crossed, retries, Schedule)) + timed.schedules(
        Schedule, crossed, retries, fault_places(crossed)[0], copy_places(crossed), trigger)


def fault_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES) -> list[Schedule]:
    """Every fault on any set of arrivals, for every delivery of one upload and retry setting."""
    exception_at, crash_at = fault_places(crossed)
    faults = [(How.EXCEPTION, b) for b in exception_at] + [(How.CRASH, b) for b in crash_at]
    # the provider's own answers at each charge call: down, a saved 500, a 409, a decline
    faults += [(outcome, b) for b in crossed if b.call == CHARGE_CALL and b.side is Side.BEFORE
               for outcome in PROVIDER_POINTS]
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
                plan = (FaultPlan(at, times, How.EXCEPTION, outcome=how) if how in PROVIDER_POINTS
                        else FaultPlan(at, times, how))
                found.append(Schedule(plan, delivery, copy_at, r))
    return found


def sqs_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                  retention: float = timings.RETENTION_DEFAULT) -> list[Schedule]:
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
    the families of time and accounts as SQS has them (`idem.explore.sqs_timed`), within the source
    queue's `retention` period."""
    retries, least = tuple(retries), min(retries)
    found = fault_schedules(crossed, retries) + [Schedule(None, "single", None, r, sent_twice=True) for r in retries]
    found += [Schedule(None, d, None, least, overwrite="versioned", second="retried_put") for d in ("single", "same_batch")]
    return timed.drawn(found + runs.run_schedules(crossed, retries, Schedule)) + sqs_timed.schedules(
        Schedule, retries, fault_places(crossed)[0], copy_places(crossed), retention)


def overwrite_schedules(crossed: Sequence[Any], retries: Iterable[int] = RETRIES,
                        versioning: Iterable[str] = VERSIONING) -> list[Schedule]:
    """Two uploads of one name, each a second order or the uploader's retried PUT (ORDERS.md): the
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
    flight. Bounded: no fault is added, and the call takes as long as it can (until 1 s before the
    timeout): the copy arrives as late as the invocation allows, so any lease or TTL shorter than
    the invocation has run out by then."""
    return [Schedule(None, "concurrent", b, r, slow=True) for b in slow_places(crossed) for r in retries]


# -- running them ------------------------------------------------------------------------------
@dataclass
class Result:
    schedule: Schedule
    effects: dict[str, int]
    dlq: int
    verdict: str
    attempts: list[Any] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # what is wrong, named: "a charge with no ledger line"
    clean: bool = False  # the clean run itself, reported because it is already wrong (CleanRunBreaks)
    left: list[Any] = field(default_factory=list)  # what its judged writes left (idem.explore.state)
    #: the answers its run asked for (`same_run`): the most arrivals at each boundary, and the
    #: attempt numbers whose retry was decided
    reached: dict[Any, int] = field(default_factory=dict)
    retries_asked: frozenset[int] = frozenset()
    #: the schedule whose run this result is (itself, or an earlier schedule that ran the same)
    ran_as: "Schedule | None" = None

    @property
    def breaks(self) -> bool:
        return self.verdict in BREAKS or self.clean


@dataclass(frozen=True)
class Books:
    """Where the handler's books are: items of the table named by the environment variable
    `table_env` that carry `attribute` are ledger lines (one per charge booked)."""

    table_env: str = "LEDGER_TABLE"
    attribute: str = "charge_id"
    named: bool = False  # named by the caller: then the clean run must book there

    @classmethod
    def parse(cls, text: str | None) -> "Books | None":
        """`None`: the default place, judged if the clean run books there; `none`: not judged;
        TABLE_ENV:ATTRIBUTE: judged, and the clean run must book there."""
        if text is None:
            return cls()
        if text in ("", "none"):
            return None
        table_env, sep, attribute = text.partition(":")
        if not sep or not table_env or not attribute:
            raise CheckInputError(f"--books {text!r} is not TABLE_ENV:ATTRIBUTE (for example "
                                  "LEDGER_TABLE:charge_id), or none")
        return cls(table_env, attribute, named=True)

    def __str__(self) -> str:
        return f"{self.table_env}:{self.attribute}"


def _env_for(world: Any, target: Target) -> dict[str, str]:
    """What the handler finds in its environment: the world's resources, then the user's settings."""
    return {**world.env(), "BUCKET": world.bucket, "FAILURE_QUEUE_URL": world.queue_url,
            "AWS_DEFAULT_REGION": "us-east-1", **dict(target.env)}


def _runtime(world: Any, target: Target, schedule: Schedule, provider_factory: str, seed: int) -> Any:
    runtime = LocalLambda(world, _env_for(world, target), fault=schedule.fault, retries=schedule.retries,
                          handler=target.spec, provider_factory=provider_factory, seed=seed,
                          **(target.deployed.runtime_options() if target.deployed else {}))
    runtime.retry_delay = timings.retry_delay(schedule.timing, runtime.max_event_age)  # drawn from its range
    # how long EventBridge retries the function as a rule target: the template's policy, or its default
    runtime.eventbridge_window = (target.deployed.eventbridge_window() if target.deployed
                                  else timings.EVENTBRIDGE_RETRY_AGE)
    return runtime


def _deliver(runtime: Any, event: dict[str, Any], schedule: Schedule, trigger: str = "s3") -> None:
    runtime.send(event)
    if schedule.delivery == "duplicate":  # the copy: drawn from its documented range (idem.explore.timings)
        runtime.send(event, at=timings.copy_delay(schedule.timing, trigger, runtime.max_event_age,
                                                  runtime.eventbridge_window))
    elif schedule.delivery == "concurrent":
        runtime.during(schedule.copy_at, lambda: runtime.send_now(event), in_flight=schedule.slow)


def order_body(number: int, nth: int = 1) -> bytes:
    """The order file the check uploads for schedule `number` (ORDERS.md): JSON naming its order,
    `check-00001` for the first, `check-00001-2` for a second order at the same name. The same
    bytes every run; an uploader's retried PUT sends these bytes again."""
    order_id = f"check-{number:05d}" + (f"-{nth}" if nth > 1 else "")
    return json.dumps({"order_id": order_id, "amount_cents": 1250, "currency": "usd"}).encode()


def _overwrite(runtime: Any, world: Any, first: Any, schedule: Schedule, number: int,
               trigger: str = "s3") -> list[tuple[Any, dict[str, Any], int]]:
    """The first upload's event, and a second upload of the same name: a second order (new bytes)
    or the uploader's retried PUT (the same bytes: the same order, a new version, request id and
    sequencer, the same eTag), a new version or, in an unversioned bucket, the same key with a new
    sequencer. Its event is sent 5 s after the first upload's invocations are over, while the first
    invocation sits at `copy_at`, or (`between`) after the first invocation failed, halfway to
    Lambda's retry. Runs them all; returns each upload, its event and its order."""
    order = 1 if schedule.second == "retried_put" else 2
    uploads = [(first, triggers.event_for(trigger, world, first), 1)]

    def second() -> dict[str, Any]:
        obj = world.upload(first.key, order_body(number, order))
        uploads.append((obj, triggers.event_for(trigger, world, obj), order))
        return uploads[-1][1]

    runtime.send(uploads[0][1])
    if schedule.delivery == "concurrent":
        runtime.during(schedule.copy_at, lambda: runtime.send_now(second()))
        runtime.run()
    elif schedule.delivery == "between":
        runtime.at(runtime.retry_delay(1, 0.0) / 2, lambda: runtime.send_now(second()))  # before the retry
        runtime.run()
    else:
        runtime.run()
        world.clock.advance(5.0)
        runtime.send(second())
        runtime.run()
    return uploads


# -- where effects land: read on the far side of each boundary -------------------------------------
def _charges_recorded(world: Any) -> set[str]:
    """Every charge the provider stand-in made (a saved 500's included), from its own record
    (`LocalWorld.provider_charges`)."""
    return {where for where, _, _ in world.provider_charges()}


def _lines_booked(world: Any, table: str, attribute: str, seen: set[str]) -> set[str]:
    """The keys of the ledger lines among the items in `table` that carry `attribute`, but those in
    `seen`, read from the table itself (`LocalWorld.table_items`: what a consistent Scan returns),
    judged per charge (`idem.explore.books`: a done record keeping the charge id is no second line).
    `seen` grows by every such item."""
    items = triggers.items_with(world, table, attribute, seen)
    seen |= {pk_text(item.get("pk")) for item in items}
    return set(books_per_charge.lines(items, attribute))


def _failures_for(world: Any, uploads: Sequence[Any]) -> list[int]:
    """Take every message out of the failure queue; count those about each upload: Lambda's
    destination records by their payload, a handler's own message by its body. One upload: a
    message naming its key (plain, URL-encoded, or either inside JSON). Two of one name: a message
    naming its sequencer (every destination record carries the whole event); a message naming only
    the key counts for neither, since it cannot say which upload it is about."""
    texts = []
    for message in _drain(world, world.queue_url):
        try:
            body = json.loads(message["Body"])
        except ValueError:
            body = message["Body"]
        payload = body.get("requestPayload", body) if isinstance(body, dict) else body
        texts.append(message["Body"] + "\n" + json.dumps(payload))
    if len(uploads) == 1:
        forms = triggers.key_forms(uploads[0].key)
        return [sum(any(form in text for form in forms) for text in texts)]
    return [sum(bool(obj.sequencer) and obj.sequencer in text for text in texts) for obj in uploads]


def _drain(world: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message in the queue, taken out of it (`LocalWorld.take_messages`: as received
    and deleted, without the calls)."""
    return list(world.take_messages(queue_url))


def _delivered(world: Any, queue_url: str) -> int:
    """The messages a handler's own queue delivers, then the queue emptied (`empty_queue`)."""
    count = 0
    while batch := world.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                             VisibilityTimeout=900).get("Messages", []):
        count += len(batch)
    empty_queue(queue_url)
    return count


#: AWS calls whose effect lands in a queue: counted as the messages the queue delivers, so a
#: FIFO queue's deduplication (MessageDeduplicationId, a 5-minute window:
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html)
#: is the queue's, as moto models it.
QUEUE_SENDS = ("sqs:SendMessage", "sqs:SendMessageBatch")
#: Publishes to a FIFO SNS topic are counted the same way, as the messages the check's own FIFO
#: queue subscribed to that topic delivers (`idem.sim.boundary._fifo_topic`): the topic's
#: deduplication is the topic's. Publishes to a standard topic (no deduplication) stay counted by calls.
TOPIC_PUBLISHES = ("sns:Publish", "sns:PublishBatch")


def run_batch(target: Target, schedules: Sequence[Schedule], baseline: dict[str, int],
              effects: Sequence[str], provider_factory: str, first: int | Sequence[int] = 0,
              books: Books | None = Books(), trigger: str = "s3", clean_state: Any = None) -> list[Result]:
    """Run `schedules` in one world (this process's, kept between batches: `idem.explore.worlds`),
    one upload (and account) each, numbered from `first` (or numbered `first`, a number for
    each); count each schedule's effects where they landed, right after it ran, on its own clock. Writes named as effects are
    judged by the state they leave against `clean_state` (`idem.explore.state`)."""
    judged = states.state_effects(effects)
    results = []
    versioned = not schedules or schedules[0].overwrite != "unversioned"
    if any((s.overwrite != "unversioned") != versioned for s in schedules):
        raise ValueError("one batch runs in one bucket: versioned or unversioned schedules, not both")
    over_stripe = loopback_stripe if target.provider == "stripe" else (lambda _: contextlib.nullcontext())
    numbers = range(first, first + len(schedules)) if isinstance(first, int) else first
    with fewer_collections(), worlds.world_for(versioned, numbers) as kept, \
            loopback_only() as refused, no_subprocesses() as spawned, over_stripe(kept.world):
        world, charges_seen, lines_seen = kept.world, kept.charges_seen, kept.lines_seen
        env = _env_for(world, target)
        table = env.get(books.table_env) if books else None
        if books and not table:
            raise CheckInputError(f"--books {books}: the handler's environment has no {books.table_env}; "
                                  "name a table the check provisions (LEDGER_TABLE) or pass --books none")
        link = accounts.linker(world, env.get("LEDGER_TABLE"), target.module)
        for number, schedule in zip(numbers, schedules):
            world.clock = VirtualClock(timings.CHECK_START)  # t=0 on its own clock, 2 minutes before midnight
            random.seed(f"idem-check/{number}")  # botocore's retry backoff (and the handler's draws): seeded
            # moto's version and message ids from the schedule's number: the same whichever
            # world, batch or process it runs in, and after whichever schedules
            world.seed_ids(number)
            # its request ids from its number too
            runtime = (triggers.sqs_runtime(world, _env_for(world, target), schedule, target.spec, provider_factory,
                                            number, target.deployed)
                       if trigger == "sqs" else _runtime(world, target, schedule, provider_factory, number))
            runtime.watch.effects = set(effects)
            # a plain name, one that needs decoding (the family names) or the longest S3 allows where
            # the schedule says (a handler that cannot take it fails visibly there, and only there)
            obj = world.upload(triggers.name_for(number, schedule), order_body(number))
            link(obj.key)  # the account's customer, for a function that reads the mapping (idem.explore.accounts)
            uploads: list[tuple[Any, dict[str, Any], int]] = []
            batch: list[Any] = []
            with schedule_deadline(SCHEDULE_SECONDS, schedule.label()):
                if trigger == "sqs":  # a batch: the checked upload, its neighbour (`again`: the first's retried PUT)
                    batch = [obj] + triggers.neighbours(trigger, world, number, order_body)
                    again = (lambda obj=obj, number=number: world.upload(obj.key, order_body(number, 1))) if schedule.overwrite else None
                    batch = sqs_timed.deliver_batch(runtime, world, batch, schedule, again, number, order_body, link)
                elif schedule.later is not None:
                    uploads = timed.run(runtime, world, obj, schedule, number, trigger, order_body, link)
                elif schedule.overwrite:
                    uploads = _overwrite(runtime, world, obj, schedule, number, trigger)
                else:
                    uploads = [(obj, triggers.event_for(trigger, world, obj), 1)]
                    _deliver(runtime, uploads[0][1], schedule, trigger)
                    runtime.run()
            if refused:
                raise CheckCouldNotFinish(f"the handler called {refused[0]}, outside the check's local AWS: "
                                          "the check refuses every socket but the loopback "
                                          f"(schedule: {schedule.label()})")
            if spawned:  # idem.sim.runtime.handler_guard: another process escapes every boundary
                raise CheckCouldNotFinish(f"the handler started a process ({spawned[0]}): what it does escapes "
                                          "every boundary the check watches; do the work in the function itself")
            count_same_effects_once(runtime.watch)  # the same execution answered again is one effect
            with on_clock(world.clock):  # what the handler's calls wrote carries the virtual time
                counted = {name: n for (name, _), n in runtime.watch.effect_counts.items()
                           if name not in QUEUE_SENDS}
                for name in set(effects) & set(QUEUE_SENDS):
                    counted[name] = sum(_delivered(world, url) for url in runtime.watch.queues
                                        if url != world.queue_url)
                for name in sorted(set(effects) & set(TOPIC_PUBLISHES)) if runtime.watch.topics else ():
                    # each topic's queue is drained once: both calls' messages go to the first name
                    counted[name] = counted.get(name, 0) + sum(_delivered(world, url)
                                                               for url in runtime.watch.topics.values())
                calls = dict(counted)
                objs = batch if trigger == "sqs" else [o for o, _, _ in uploads]
                left = states.read(world, runtime.watch, judged, states.Names(number, objs, world.bucket, trigger)) \
                    if judged else []
                orders = [1] if trigger == "sqs" else [o for _, _, o in uploads]
                by_state = states.judge(clean_state, left, judged, baseline, calls, orders,
                                        renamed=timed.renamed(schedule)) \
                    if judged and clean_state is not None else None
                if by_state:
                    counted.update(by_state.counts)
                if trigger == "sqs":  # a batch of uploads: each judged on its own money
                    results.append(_judge_sqs(world, runtime, schedule, batch, counted, baseline, table,
                                              books, charges_seen, lines_seen))
                    if by_state:
                        results[-1].verdict = states.worse(results[-1].verdict, by_state, results[-1].dlq,
                                                           calls, baseline)
                        results[-1].findings += by_state.findings
                    results[-1].left = left
                    _asked(results[-1], runtime)
                    continue
                recorded = _charges_recorded(world) - charges_seen
                charges_seen |= recorded
                counted[CHARGES] = len(recorded)
                if table:
                    lines = _lines_booked(world, table, books.attribute, lines_seen)
                    lines_seen |= lines
                    counted[LINES] = len(lines)
                dlqs = _failures_for(world, [o for o, _, _ in uploads])
            declined = schedule.fault is not None and schedule.fault.outcome == "declined"
            if len(uploads) == 1:
                verdict, findings = judge_upload(counted, baseline, dlqs[0], declined=declined)
            else:  # judged per ORDER: an uploader's retried PUT is the same order again
                per, failed = _per_order(_per_upload(runtime, uploads, counted), dlqs, orders)
                for i, counts in enumerate(per if by_state else []):  # a write per order, by its state
                    for name in clean_state.by_state(judged):
                        landed = counts.get(name, 0) or states.landed_for_order(runtime.watch, uploads, orders, name, i)
                        counts[name] = states.order_count(by_state, name, landed, i, orders,
                                                          clean_state.ordering, baseline)
                verdict, findings = judge_uploads(per, counted, baseline, failed, declined=declined, unit="order")
            if by_state:
                verdict = states.worse(verdict, by_state, sum(dlqs), calls, baseline)
                findings = findings + by_state.findings
            results.append(Result(schedule, counted, sum(dlqs), verdict, runtime.attempts, findings, left=left))
            _asked(results[-1], runtime)
    release_handler_threads()  # a killed invocation's pool must not hold the process at exit
    return results


#: What a result keeps of each attempt's printed lines (the report reads the last few): a handler
#: printing a 1,000-line tail on every invocation must not keep it for every schedule.
RESULT_LOG_LINES = 20


def _asked(result: Result, runtime: Any) -> None:
    """Keep with a result the answers its run asked for (`idem.explore.reuse`), and the last
    RESULT_LOG_LINES of what each attempt printed."""
    result.reached = dict(runtime.watch.reached)
    result.retries_asked = frozenset(runtime.retries_asked)
    for attempt in result.attempts:
        del attempt.logs[:-RESULT_LOG_LINES]


def _per_upload(runtime: Any, uploads: Sequence[tuple[Any, dict[str, Any], int]],
                counted: dict[str, int]) -> list[dict[str, int]]:
    """Each upload's charges and named effects (not the queue sends: those are counted where the
    queue delivers them, for the schedule as a whole): what the invocations of its event did.
    A charge landed at the provider that no upload's invocation asked for (made outside any
    invocation) is put on the first upload: never fewer charges than landed."""
    works = [work_of(event) for _, event, _ in uploads]
    per = [{CHARGES: runtime.provider.made_for[work]} for work in works]
    for (name, work), n in runtime.watch.effect_counts.items():
        if name not in QUEUE_SENDS and work in works:
            per[works.index(work)][name] = per[works.index(work)].get(name, 0) + n
    per[0][CHARGES] += max(0, counted.get(CHARGES, 0) - sum(p[CHARGES] for p in per))
    return per


def _per_order(per_upload: Sequence[dict[str, int]], dlqs: Sequence[int],
               orders: Sequence[int]) -> tuple[list[dict[str, int]], list[int]]:
    """The uploads' counts and failure-queue messages summed per order (ORDERS.md: one charge per
    order, so an uploader's retried PUT adds nothing to what its order should get)."""
    names = list(dict.fromkeys(orders))
    per: list[dict[str, int]] = [{} for _ in names]
    failed = [0] * len(names)
    for counts, dlq, order in zip(per_upload, dlqs, orders):
        i = names.index(order)
        failed[i] += dlq
        for name, n in counts.items():
            per[i][name] = per[i].get(name, 0) + n
    return per, failed


def _judge_sqs(world: Any, runtime: Any, schedule: Schedule, uploads: Sequence[Any], counted: dict[str, int],
               baseline: dict[str, int], table: str | None, books: Books | None, charges_seen: set[str],
               lines_seen: set[str]) -> Result:
    """One SQS schedule's result: its batch's uploads judged one by one (`triggers.judge_batch`)."""
    charges, unowned, owner_of = triggers.charges_by_upload(world, uploads, charges_seen)
    counted[CHARGES] = sum(charges) + unowned
    lines, unowned_lines = [0] * len(uploads), 0
    if table and books:
        lines, unowned_lines = triggers.lines_by_upload(world, table, books.attribute, owner_of, uploads,
                                                        lines_seen)
        counted[LINES] = sum(lines) + unowned_lines
    dlq = triggers.failures_by_upload(_drain(world, world.queue_url), uploads)
    # with the uploader's retried PUT, a name's charges are its order's (ORDERS.md)
    verdict, findings = triggers.judge_batch(uploads, charges, unowned, lines, unowned_lines, dlq, counted,
                                             baseline, runtime.provider.declined, "order" if schedule.overwrite
                                             or schedule.later else "upload", len(triggers.SQS_BATCH))
    return Result(schedule, counted, sum(dlq), verdict, runtime.attempts, findings)


def discover(target: Target, effects: Sequence[str], provider_factory: str,
             books: Books | None = Books(), trigger: str = "s3") -> tuple[list[Any], dict[str, int], list[Any]]:
    """One clean run: the boundaries crossed, in order, and the effects it had."""
    # its upload's name is one no schedule uses: a queue's deduplication id made from it
    # must not drop a schedule's message
    (result,) = run_batch(target, [Schedule(retries=0)], {}, effects, provider_factory, CLEAN_RUN, books,
                          trigger)
    (attempt,) = result.attempts
    if attempt.failed and (where := missing_setting(attempt.error, attempt.traceback, dict(target.env))):
        name = attempt.error.split("'")[1]
        raise CheckInputError(f"the handler needs the setting {name}, which the check was not given "
                              f"({attempt.error} {where}): pass it with --env {name}=VALUE")
    if attempt.failed:  # the handler fails with no fault at all: its own answer, a break (exit 1)
        logs = "; ".join(attempt.logs[-2:])
        did = any(result.effects.get(name) for name in (CHARGES, LINES, *effects))
        verdict = ((Verdict.NEEDS_ATTENTION if result.dlq else Verdict.SILENT_MISMATCH) if did
                   else Verdict.FAILED_VISIBLY if result.dlq else Verdict.SILENT_LOSS).value
        raise CleanRunBreaks(replace(result, verdict=verdict, findings=[
            f"the clean run fails, before any fault: {attempt.error}" + (f" (its last log lines: {logs})" if logs else "")
            + ". If it needs a setting, pass it with --env NAME=VALUE"] + result.findings))
    if result.findings:  # a batch whose charges cannot be told apart by upload
        raise CheckInputError(f"--trigger {trigger}: {'; '.join(result.findings)}")
    lines, charges = result.effects.get(LINES, 0), result.effects.get(CHARGES, 0)
    if books is not None and lines and lines != charges:  # one ledger line per charge, on a clean run too
        raise CleanRunBreaks(replace(result, verdict=Verdict.SILENT_MISMATCH.value, findings=[
            f"the clean run booked {lines} ledger line{'s' if lines != 1 else ''} for {charges} "
            f"charge{'s' if charges != 1 else ''}: the books disagree with the money with no fault at all"]))
    made = sorted(attempt.calls) + ([CHARGE_CALL] if any(c.boundary.call == CHARGE_CALL
                                                         for c in attempt.crossings) else [])
    missing = [name for name in effects if not result.effects.get(name)]
    if missing:
        raise CheckInputError(f"--effect {', '.join(missing)} never happens on a clean run; the calls it "
                              f"makes are: {', '.join(made) or 'none'}")
    if not result.effects.get(CHARGES) and not effects:
        raise CheckInputError(f"{target.name} made no charge on a clean run and no --effect is named: "
                              "nothing to count. Does it build its payment client with make_provider "
                              "(else pass --provider-factory NAME), or name its effect with --effect?")
    baseline = dict(result.effects)
    if not baseline.get(LINES):
        if books is not None and books.named and baseline.get(CHARGES):
            raise CheckInputError(f"the clean run charged and booked no ledger line where --books {books} "
                                  "points: name where the handler books its charges, or --books none")
        baseline.pop(LINES, None)  # no books where the default points: only effects are judged
    return [c.boundary for c in attempt.crossings], baseline, result.attempts


@dataclass
class CheckReport:
    """Everything `check_handler` found: one result per schedule, and how to read them."""

    target: Target
    effects: tuple[str, ...]
    boundaries: list[Any]
    baseline: dict[str, int]
    results: list[Result]
    books: Books | None = None
    trigger: str = "s3"
    runs: int = 0  # how many schedules ran; the others' runs were the same as one of these (reuse)

    @property
    def broken(self) -> list[Result]:
        return [r for r in self.results if r.breaks]

    @property
    def holds(self) -> bool:
        return not self.broken

    @property
    def retries(self) -> tuple[int, ...]:
        """The MaximumRetryAttempts values the schedules tried."""
        return tuple(sorted({r.schedule.retries for r in self.results}))

    def smallest(self, verdict: str) -> Result | None:
        """The smallest schedule that ended in `verdict`, if any did."""
        return min((r for r in self.results if r.verdict == verdict), key=lambda r: r.schedule.size,
                   default=None)

    def dimensions(self) -> dict[str, int]:
        """How many schedules each family added (DIMENSIONS)."""
        counts = Counter(r.schedule.dimension for r in self.results)
        return {name: counts[name] for name in DIMENSIONS}

    def tally(self) -> dict[str, int]:
        counts = Counter(r.verdict for r in self.results)
        return {v: counts[v] for v in VERDICTS if counts[v]}

    def smallest_break(self) -> Result | None:
        """The smallest schedule that breaks the handler, if any does."""
        return min(self.broken, key=lambda r: r.schedule.size, default=None)

    def books_judged(self) -> str:
        """Whether the books were weighed against the money, and where they were read."""
        if self.books is None:
            return "books: not judged (--books none)"
        if LINES not in self.baseline:
            return (f"books: NOT judged: no item with {self.books.attribute} in {self.books.table_env} "
                    "on the clean run (see --books, or books= in Python)")
        return f"books: ledger lines are items of {self.books.table_env} with {self.books.attribute}"

    def explain(self) -> str:
        """The report a person reads: the boundaries, the verdicts, the smallest break."""
        # a handler that charges nothing is told of its effects only, never of charges or books
        money = bool(self.baseline.get(CHARGES)) or not self.baseline
        counted = [n for n in self.baseline if money or n not in (CHARGES, LINES)]
        # the families of schedules (--help says what each is)
        families = ", ".join(f"{n} {name}" for name, n in self.dimensions().items())
        lines = [f"{self.target.name}: {len(self.results)} schedules ({families}) over {len(self.boundaries)} "
                 f"boundaries; effects counted: {', '.join(counted) or 'none'}"
                 + ("; provider: Stripe's SDK, over a loopback Stripe" if self.target.provider == "stripe" else ""),
                 "boundaries (from a clean run): " + " > ".join(map(str, self.boundaries)),
                 *([triggers.describe(self.trigger, self.target.deployed)] if self.trigger != "s3" else []),
                 *([self.target.deployed.describe(self.trigger, self.retries)] if self.target.deployed else []),
                 *([self.books_judged()] if money else []),
                 *([f"{self.runs} of them run: each other schedule asked only what one of these answered, "
                    "and has its result"] if 0 < self.runs < len(self.results) else []), ""]
        width = max(map(len, VERDICTS))
        for verdict, n in self.tally().items():
            mark = "  BREAK" if verdict in BREAKS or any(r.clean for r in self.results) else ""
            lines.append(f"  {verdict:<{width}}  {n:>5}{mark}")
        smallest = self.smallest_break()
        if smallest is None:
            lines += ["", f"holds: no double effect, silent loss or silent mismatch in any of the "
                          f"{len(self.results)} schedules"]
            return "\n".join(lines)
        if smallest.clean:
            lines += ["", "breaks on the clean run (no fault, one delivery, no retry), so no other schedule was run:",
                      *timeline(smallest, smallest.effects)]
            return "\n".join(lines)
        broken = Counter(r.schedule.dimension for r in self.broken)
        where = ", ".join(f"{broken[name]} of the {n} {name}" for name, n in self.dimensions().items() if broken[name])
        lines += ["", f"breaks in {len(self.broken)} of {len(self.results)} schedules ({where}); the smallest:",
                  *timeline(smallest, self.baseline)]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as data, in the shape docs/check-report.schema.json describes."""
        smallest = self.smallest_break()
        return {"schema_version": SCHEMA_VERSION, "exit_code": 0 if self.holds else 1,
                "target": self.target.name, "env": dict(self.target.env), "trigger": self.trigger,
                **({"deployed": self.target.deployed.as_dict()} if self.target.deployed else {}),
                "boundaries": [str(b) for b in self.boundaries], "baseline": self.baseline,
                "books": None if self.books is None else str(self.books),
                "books_judged": LINES in self.baseline,
                "schedules": len(self.results), "runs": self.runs or len(self.results),
                "dimensions": self.dimensions(),
                "verdicts": self.tally(), "breaks": len(self.broken),
                "holds": self.holds,
                "smallest_break": None if smallest is None else {
                    "schedule": timed.result_label(smallest), "verdict": smallest.verdict,
                    "effects": smallest.effects, "failure_queue": smallest.dlq,
                    "findings": smallest.findings, "timeline": timeline(smallest, self.baseline)},
                "results": [{"schedule": timed.result_label(r), "verdict": r.verdict, "effects": r.effects,
                             "failure_queue": r.dlq, "findings": r.findings,
                             **({"same_run_as": r.ran_as.label()} if r.ran_as else {})} for r in self.results]}


def error_json(error: CheckInputError) -> dict[str, Any]:
    """What `--json` prints when the check could not start (2) or finish (3)."""
    return {"schema_version": SCHEMA_VERSION, "exit_code": error.exit_code, "error": str(error),
            "handler_traceback": error.handler_traceback or None}


def timeline(result: Result, baseline: dict[str, int]) -> list[str]:
    """One schedule as a person reads it: each invocation, the boundaries it crossed, the end."""
    lines = [f"  schedule: {timed.result_label(result)}"]
    for a in result.attempts:
        where = f"{'cold' if a.cold else 'warm'} container {a.container}"
        lines.append(f"  t={a.start:>6.0f}s  delivery {a.delivery}, attempt {a.attempt} ({where})")
        for crossing in a.crossings:
            fault = f"   <-- {crossing.failed} injected here" if crossing.failed else ""
            late = f"  (t={crossing.t:.0f}s: a slow call)" if crossing.t > a.start + 0.5 else ""
            lines.append(f"      {crossing.boundary}{late}{fault}")
        lines.append(f"      => {a.outcome}" + (f": {a.error}" if a.error else ""))
    counts = ", ".join(f"{name} {result.effects.get(name, 0)}" + ("" if result.clean else f" (clean run {n})")
                       for name, n in baseline.items() if n)
    lines.append(f"  effects: {counts or 'none'}; failure queue: {result.dlq} -> {result.verdict}")
    if result.findings:
        lines.append(f"  wrong: {'; '.join(result.findings)}")
    return lines


def check_handler(target: str, *, effects: Iterable[str] = (), env: dict[str, str] | None = None,
                  retries: Iterable[int] = RETRIES, provider_factory: str = "make_provider",
                  workers: int = 1, books: str | None = None, provider: str = "stand-in",
                  versioning: Iterable[str] = VERSIONING, trigger: str = "s3",
                  ordering: str = "none", reuse_runs: bool = True, deployed: Any = None) -> CheckReport:
    """Check a handler against every schedule; see the module docstring. `workers` > 1 runs
    batches in that many processes. `provider`: what the handler's provider factory returns,
    the stand-in or Stripe's SDK (keyed_stripe.StripeProvider) aimed at a loopback Stripe that
    keeps the stand-in's rules. `versioning`: the buckets a second upload of the same name is
    tried in (versioned, unversioned). `trigger`: s3, sqs or eventbridge (`idem.explore.triggers`).
    `ordering`: the handler's declared ordering rule, none or sequencer (`idem.explore.state`).
    `reuse_runs`: a schedule whose answers an earlier run already gave gets that run's result
    (`idem.explore.reuse`); False runs every schedule (the tests compare the two). `deployed`: the
    function's settings as its template deploys it (`idem.explore.deployed`), for every run.
    Raises CheckInputError (bad input, exit 2) or CheckCouldNotFinish (exit 3)."""
    if provider not in PROVIDERS:
        raise CheckInputError(f"provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    try:
        trigger = triggers.check_trigger(trigger)
    except ValueError as bad:
        raise CheckInputError(str(bad)) from None
    resolved = replace(resolve(target, env), provider=provider, deployed=Deployed.of(deployed))
    if resolved.deployed and resolved.deployed.refusal(trigger):
        raise CheckInputError(resolved.deployed.refusal(trigger))
    effects = tuple(dict.fromkeys(effects))
    for name in effects:
        if ":" not in name or name.startswith(":") or name.endswith(":"):
            raise CheckInputError(f"effect {name!r} is not SERVICE:Operation (for example sqs:SendMessage)")
    retries = tuple(sorted(set(retries)))
    if not retries or any(r not in RETRIES for r in retries):
        raise CheckInputError(f"retries are MaximumRetryAttempts values: 0, 1 or 2 (got {retries})")
    where = Books.parse(books)
    if ordering not in states.ORDERINGS:
        raise CheckInputError(f"--ordering {ordering!r} is not one of {', '.join(states.ORDERINGS)}")
    versioning = tuple(dict.fromkeys(versioning))
    if any(v not in VERSIONING for v in versioning):
        raise CheckInputError(f"versioning is any of {', '.join(VERSIONING)} (got {', '.join(versioning)})")

    ensure_moto()
    try:
        return _check(resolved, effects, retries, provider_factory, workers, where, versioning, trigger, ordering,
                      reuse_runs)
    finally:
        worlds.close()  # this process's worlds (a worker's go with it)


def _check(resolved: Target, effects: tuple[str, ...], retries: tuple[int, ...], provider_factory: str,
           workers: int, where: Books | None, versioning: tuple[str, ...], trigger: str, ordering: str,
           reuse_runs: bool) -> CheckReport:
    """check_handler once its arguments are checked."""
    with _as_tool_errors():
        try:
            crossed, baseline, attempts = discover(resolved, effects, provider_factory, where, trigger)
        except CleanRunBreaks as wrong:
            clean = replace(wrong.result, clean=True)
            crossed = [c.boundary for a in clean.attempts for c in a.crossings]
            return CheckReport(resolved, effects, crossed, {}, [clean], where, trigger)
        retention = float(resolved.deployed.message_retention) if resolved.deployed else timings.RETENTION_DEFAULT
        found = object_schedules.kept((sqs_schedules(crossed, retries, retention) if trigger == "sqs"
                                       else schedules_for(crossed, retries, versioning, trigger))
                                      + key_decoding.schedules(Schedule, retries, trigger), trigger, CheckReport)
        try:  # a test knob: only some families (idem.explore.family_choice)
            found = family_choice.chosen(found, DIMENSIONS)
        except ValueError as bad:
            raise CheckInputError(str(bad)) from None
        clean_state = _clean_state(resolved, effects, provider_factory, where, trigger, ordering)
        with _pool(workers) as pool:
            def run(indexes: list[int]) -> list[Result]:
                # a schedule's number (its upload and account) is its place in `found`, whichever
                # phase and batch it runs in, so the report does not depend on `workers`
                batches = _batches(found, indexes, workers)
                args = [(resolved, [found[i] for i in batch], baseline, effects, provider_factory, batch, where,
                         trigger, clean_state) for batch in batches]
                by_index = {i: r for batch, part in zip(batches, _run_batches(args, pool))
                            for i, r in zip(batch, part)}
                return [by_index[i] for i in indexes]  # in the order asked, whatever bucket each ran in

            if reuse_runs:
                results, runs = reuse.run_once(found, run)
            else:
                results, runs = run(list(range(len(found)))), len(found)
    return key_decoding.judged(CheckReport(resolved, effects, crossed, baseline, results, where, trigger, runs=runs))


def _batches(schedules: Sequence[Schedule], indexes: Sequence[int], workers: int) -> list[list[int]]:
    """The schedules to run, in batches of one bucket (versioned or unversioned, one or the other),
    each of BATCH_SMALLEST to BATCH schedules, largest first: a batch takes about a share of what
    is left of the phase (1 / (BATCH_SHARE x processes)), so the phase ends on small batches and
    the processes finish it together (the next phase waits for the last). Batches cost no world
    each (`idem.explore.worlds`)."""
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
def _pool(workers: int) -> Iterator[Any]:
    """`workers` processes for every phase of the check, or None for one (this process)."""
    if workers <= 1:
        yield None
        return
    import multiprocessing

    # fork where the platform has it: the workers start with moto and botocore's models
    # already loaded (a spawned worker spends seconds importing them); spawn elsewhere.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(workers) as pool:
        yield pool


def _run_batches(args: Sequence[tuple[Any, ...]], pool: Any) -> list[list[Result]]:
    """run_batch on each argument tuple, in `pool`'s processes when there is a pool."""
    if pool is None or len(args) <= 1:
        return [run_batch(*a) for a in args]
    parts = pool.starmap(_run_batch_in_worker, args, chunksize=1)  # an even finish
    for part in parts:
        for failed in part:
            if isinstance(failed, _Failed):
                failed.raise_it()
    return parts


def _clean_state(target: Target, effects: Sequence[str], provider_factory: str, books: Books | None,
                 trigger: str, ordering: str) -> Any:
    """The clean run twice more, under two other numbers: what its judged writes
    leave, with what differs between the two left out (`idem.explore.state.CleanState`); None
    when no named effect is a write."""
    if not states.state_effects(effects):
        return None
    # both in one world, one after the other: the second's invocation ids, uploads and sequencers are
    # others, and its clock starts a day and 1.5 s later, so an id or a time the handler writes differs
    offsets = iter((0.0, 86_401.5))
    saved = VirtualClock
    globals()["VirtualClock"] = lambda *start: saved(saved(*start).start + next(offsets, 0.0))
    try:
        runs = [r.left for r in run_batch(target, [Schedule(retries=0), Schedule(retries=0)], {}, effects,
                                          provider_factory, CLEAN_RUN - 2, books, trigger)]
    finally:
        globals()["VirtualClock"] = saved
    return replace(states.CleanState.of(*runs), ordering=ordering)


@contextlib.contextmanager
def _as_tool_errors() -> Iterator[None]:
    """What goes wrong with the handler itself, as the check's exit 2 or 3 (never as a break)."""
    try:
        yield
    except HandlerNotLoaded as error:
        raise CheckInputError(str(error), error.handler_traceback) from None
    except HandlerExited as error:
        raise CheckCouldNotFinish(f"{error}: a function that ends its own process is not something "
                                  "the check can judge; raise an exception instead") from None
    except ScheduleTimedOut as error:
        raise CheckCouldNotFinish(str(error)) from None


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
        with _as_tool_errors():
            results = run_batch(*args)
    except CheckInputError as error:
        return [_Failed(error.exit_code, str(error), error.handler_traceback)]
    for attempt in (a for r in results for a in r.attempts):  # what a person reads survives the trip
        attempt.result = None  # back; the runtime's objects need not
    return results
