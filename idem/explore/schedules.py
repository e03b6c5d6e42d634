"""Every schedule the platform can produce for one upload, built and run.

A schedule is a Scenario: a handler, a fault point, how it fails (an exception or a
crash), which arrivals at the fault point fail (any non-empty subset of 1, 2, 3), how S3
delivers the event (once, twice in a row, or a second copy running while the first
invocation sits at one of its step boundaries) and how many retries Lambda makes (0-2).

Arrivals are counted per piece of work, not per invocation: with one delivery the n-th
arrival is attempt n, but a duplicate's attempts take arrival numbers too. A concurrent
copy started at `before_charge` reaches the fault point *first*, so the first invocation
arrives second.

Two kinds of schedules are the same schedule and run once (`trim` explains each):
- arrivals that can never happen: one delivery with r retries reaches the fault point
  at most r + 1 times, two deliveries at most 2(r + 1); `1,3` with one delivery and one
  retry is `1`, and a subset left empty is the no-fault schedule;
- a concurrent copy at a step the first invocation never reaches (its first arrival
  failed before it): the copy is never sent, which is the single-delivery schedule.
A copy concurrent with the *start* of the first invocation is not a separate schedule
here: the local runtime is single-threaded, so that copy would run to its end before the
first one's first step, which is `duplicate` with the two deliveries renamed. Real
threads starting together are raced in `idem.explore.race`.

The runner shares one LocalWorld between many schedules, one object (and one account)
per schedule and a fresh virtual clock for each, and reads every outcome back in one
pass at the end: the same verdicts as `scenarios.run`, for a fraction of the cost.
"""
from __future__ import annotations

import contextlib
import itertools
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Iterator
from urllib.parse import unquote_plus

from ..core.clock import VirtualClock
from ..core.patterns import HANDLERS, HAS_DONE_STATE
from ..core.dynamo import to_item
from ..core.keys import idempotency_key
from ..core.ledger import Record, booked
from ..core.reconcile.audit import compare, list_objects, scan
from ..sim.faults import PROVIDER_POINTS, FaultPlan
from ..sim.stripe.server import loopback_stripe
from .scenario import POWERTOOLS, Outcome, Scenario, deliver, fault_of
from .judge.verdicts import BREAKS, KEYED_OK, MATRIX_VERDICTS, PROVIDER_VERDICTS, completed, judge_run
from ..sim.world import LocalWorld
from ..sim.runtime import LocalLambda

FAULTY_POINTS = ("at_charge", "after_charge", "after_commit")
HOWS = ("exception", "crash")
ARRIVALS = (1, 2, 3)
SUBSETS = tuple(",".join(map(str, combo)) for n in (1, 2, 3)
                for combo in itertools.combinations(ARRIVALS, n))
#: How S3 delivers: (delivery, concurrent_at). The steps are the first invocation's checkpoints.
DELIVERY_MODES = (("single", "-"), ("duplicate", "-"), ("concurrent", "before_charge"),
                  ("concurrent", "charged"), ("concurrent", "recorded"))
RETRIES = (0, 1, 2)
#: Fault points that come before each checkpoint in the charge step. The provider's own
#: outcomes end the charge call with an error, so a copy waiting for a later step is not sent.
_BEFORE_STEP = {"before_charge": (), "charged": ("at_charge", *PROVIDER_POINTS),
                "recorded": ("at_charge", "after_charge", *PROVIDER_POINTS)}


def raw_count(handlers: Iterable[str] = tuple(HANDLERS)) -> int:
    """The size of the full product, before equal schedules are merged."""
    per_handler = (len(FAULTY_POINTS) * len(HOWS) * len(SUBSETS) + 1) * len(DELIVERY_MODES) * len(RETRIES)
    return per_handler * len(tuple(handlers))


def reachable(delivery: str, retries: int) -> int:
    """The most arrivals at a fault point this delivery and retry setting can produce."""
    return (1 if delivery == "single" else 2) * (retries + 1)


def trim(handler: str, point: str, how: str, times: str, delivery: str, concurrent_at: str,
         retries: int) -> Scenario | None:
    """The canonical schedule for one point of the product, or None when it is another
    point's twin (see the module docstring)."""
    if point == "none":
        return _scenario(handler, "none", "exception", "-", delivery, concurrent_at, retries)
    chosen = [n for n in map(int, times.split(",")) if n <= reachable(delivery, retries)]
    if not chosen:
        return None  # every failing arrival is out of reach: the no-fault schedule
    canonical = ",".join(map(str, chosen))
    if canonical != times:
        return None  # the same as the schedule without the unreachable arrivals
    if delivery == "concurrent" and point in _BEFORE_STEP[concurrent_at] and 1 in chosen:
        return None  # the first invocation fails before the step: the copy is never sent
    return _scenario(handler, point, how, times, delivery, concurrent_at, retries)


def _scenario(handler: str, point: str, how: str, times: str, delivery: str, concurrent_at: str,
              retries: int) -> Scenario:
    return Scenario(handler, point, times, delivery, how=how, retries=retries,
                    concurrent_at=concurrent_at if delivery == "concurrent" else "before_charge")


def all_schedules(handlers: Iterable[str] = tuple(HANDLERS)) -> list[Scenario]:
    """Every distinct schedule, for each handler, in a stable order."""
    found = []
    points = [("none", "exception", "-")] + list(itertools.product(FAULTY_POINTS, HOWS, SUBSETS))
    for handler in handlers:
        for (point, how, times), (delivery, at), retries in itertools.product(
                points, DELIVERY_MODES, RETRIES):
            schedule = trim(handler, point, how, times, delivery, at, retries)
            if schedule is not None:
                found.append(schedule)
    return found


def provider_schedules(handlers: Iterable[str] = tuple(HANDLERS)) -> list[Scenario]:
    """Every distinct schedule of the provider's own outcomes (PROVIDER_POINTS: down before
    executing, a saved 500, a 409, a decline) on any set of arrivals at the charge call, for
    every delivery and retry setting. They are the provider's answers, so `how` is moot."""
    found = []
    for handler in handlers:
        for point, times, (delivery, at), retries in itertools.product(
                PROVIDER_POINTS, SUBSETS, DELIVERY_MODES, RETRIES):
            schedule = trim(handler, point, "exception", times, delivery, at, retries)
            if schedule is not None:
                found.append(schedule)
    return found


def label(s: Scenario) -> str:
    """A schedule in one line: `keyed at_charge/crash/1,3 concurrent@charged r=2`."""
    delivery = f"concurrent@{s.concurrent_at}" if s.delivery == "concurrent" else s.delivery
    fault = "none" if s.fault == "none" else f"{s.fault}/{s.how}/{s.times}"
    return f"{s.handler} {fault} {delivery} r={s.retries}"


@dataclass
class ScheduleRun:
    scenario: Scenario
    obj: Any
    account: str
    attempts: list[Any]
    record: str | None = None  # read elsewhere (Powertools keeps its records in its own table)


@dataclass(frozen=True)
class Result:
    """A schedule's outcome, and what the reconciliation job said about its object
    afterwards: any of missing, stuck, double, mismatch (empty: nothing to report)."""

    outcome: Outcome
    flagged: tuple[str, ...]

    @property
    def visible(self) -> bool:
        """Someone will hear about it: the failure queue, or the reconciliation report."""
        return bool(self.outcome.dlq or self.flagged)


def run_schedules(schedules: Iterable[Scenario], batch: int = 20, *, over_stripe: bool = False) -> list[Result]:
    """Run the schedules, `batch` to a world, and return their results in order. `over_stripe`:
    the function charges through Stripe's SDK against a loopback Stripe (idem.sim.stripe.server).

    Small batches keep the tables small: moto copies a whole table to run a transaction.
    """
    schedules = list(schedules)
    outcomes: list[Result] = []
    for start in range(0, len(schedules), batch):
        with LocalWorld(prefix="sched") as world, (loopback_stripe(world) if over_stripe
                                                     else contextlib.nullcontext()):
            runs = [_run_one(world, s, start + i) for i, s in enumerate(schedules[start:start + batch])]
            outcomes.extend(read_back(world, runs))
    return outcomes


def _run_one(world: LocalWorld, scenario: Scenario, number: int) -> ScheduleRun:
    if scenario.handler not in HANDLERS:
        raise ValueError(f"schedules run the core handlers only, not {scenario.handler!r}")
    world.clock = VirtualClock()  # each schedule starts at t=0 on its own clock
    account = f"acct{number:05d}"
    # ORDER_IDENTITY=upload: read_back finds each schedule's record by its upload's key (many
    # schedules share one world); the order's own key is judged by idem check and the scenarios.
    runtime = LocalLambda(world, world.env(scenario.handler, ORDER_IDENTITY="upload"), fault=fault_of(scenario),
                          retries=scenario.retries,
                          timeout=scenario.timeout, reuse_containers=scenario.reuse_containers)
    obj = world.upload(f"{account}/order.csv")
    deliver(runtime, world.event(obj), scenario.delivery, scenario.concurrent_at)
    runtime.run()
    if scenario.delivery != "single" and 2 not in {a.delivery for a in runtime.attempts}:
        raise AssertionError(f"{label(scenario)}: the second copy was never delivered")
    return ScheduleRun(scenario, obj, account, runtime.attempts)


def drain_failures(world: LocalWorld) -> dict[str, list[dict[str, Any]]]:
    """Take every message out of the failure queue, grouped by the object key it is about."""
    found: dict[str, list[dict[str, Any]]] = {}
    while True:
        messages = world.sqs.receive_message(QueueUrl=world.queue_url,
                                             MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            body = json.loads(message["Body"])
            for record in body["requestPayload"]["Records"]:
                found.setdefault(unquote_plus(record["s3"]["object"]["key"]), []).append(body)
        world.sqs.delete_message_batch(QueueUrl=world.queue_url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)])


@dataclass(frozen=True)
class _Fate:
    """What became of one object: read back from the tables, the queue and the job."""

    charges: int
    ledger: int
    record: str
    failures: list[dict[str, Any]]
    completed: bool
    verdict: str
    flagged: tuple[str, ...]


class _Readback:
    """One read of each table and the failure queue, and one reconciliation run at `now`."""

    def __init__(self, world: LocalWorld, now: float) -> None:
        ledger_items = scan(world.dynamodb, world.ledger_table)
        provider_items = scan(world.dynamodb, world.provider_table)
        self.items = {item["pk"]: item for item in ledger_items}
        self.books = booked(ledger_items)
        self.charges = Counter(i["reference"] for i in provider_items if i.get("kind") == "charge")
        self.failures = drain_failures(world)
        self.report = compare(world.bucket, list_objects(world.s3, world.bucket), ledger_items,
                              provider_items, now=now)

    def fate(self, handler: str, obj: Any, account: str, record: str | None = None) -> _Fate:
        """Judged as scenarios.read_outcome judges a run, plus the job's findings. `record`,
        when given, is the record's status read elsewhere (Powertools' own table)."""
        money = self.charges[obj.uri]
        entries = self.books.get(account, (0, 0))[0]
        key = idempotency_key(obj, "version")
        record_item = self.items.get(key)
        if record is None:
            record = str(Record.from_item(to_item(record_item)).status) if record_item else "-"
        failures = self.failures.get(obj.key, [])
        done = completed(money, entries, record, handler in HAS_DONE_STATE or handler == POWERTOOLS)
        r = self.report
        found = [("missing", any(m.object == obj.uri for m in r.missing)),
                 ("stuck", any(s.key == key for s in r.stuck)),
                 ("double", any(d.reference == obj.uri for d in r.double_charges)),
                 ("mismatch", any(a.account == account for a in r.mismatches)),
                 ("attention", any(n.key == key for n in r.attention))]
        return _Fate(money, entries, record, failures, done,
                     judge_run(money, done, len(failures), record),
                     tuple(name for name, hit in found if hit))


def read_back(world: LocalWorld, runs: list[ScheduleRun]) -> Iterator[Result]:
    """Each schedule's outcome, and what the reconciliation job found about its object."""
    # the job runs an hour after the last schedule ended: every lease is over by then
    readback = _Readback(world, world.clock.start + max(a.end for r in runs for a in r.attempts) + 3600)
    for run in runs:
        fate = readback.fate(run.scenario.handler, run.obj, run.account, run.record)
        outcome = Outcome(
            scenario=run.scenario, charges=fate.charges, ledger=fate.ledger,
            attempts=len(run.attempts), dlq=len(fate.failures), record=fate.record,
            completed=fate.completed, dynamodb_calls=sum(a.dynamodb_calls for a in run.attempts),
            verdict=fate.verdict, trace=list(run.attempts), items=[], failures=fate.failures)
        yield Result(outcome, fate.flagged)


# -- random schedules: several objects, several deliveries, faults and clock jumps ------------
@dataclass(frozen=True)
class Jump:
    """When invocation (delivery, attempt) reaches `step`, the clock jumps `seconds`
    and, if `copy` names an object, S3 delivers that object's event at that moment."""

    delivery: int
    attempt: int
    step: str
    seconds: float
    copy: int | None = None


@dataclass(frozen=True)
class Program:
    """A random schedule: `objects` uploads, each delivered at the times in `deliveries`
    (object, seconds), under one fault plan, with clock jumps inside invocations."""

    objects: int
    deliveries: tuple[tuple[int, float], ...]
    fault: str = "none"
    times: str = "once"
    how: str = "exception"
    retries: int = 2
    jumps: tuple[Jump, ...] = ()
    ttl: int = 900  # RECORD_TTL_SECONDS: short, so a jump or a late copy can pass it


@dataclass(frozen=True)
class ObjectOutcome:
    """One object's fate in a program run, and what reconciliation says about it."""

    index: int
    charges: int
    ledger: int
    record: str
    dlq: int
    verdict: str
    flagged: tuple[str, ...]


class _WorldPool:
    """One world serves many programs (fresh objects, accounts and clock for each), and is
    replaced every `size` programs so its tables stay small."""

    def __init__(self, size: int = 5) -> None:
        self.size, self.used, self.world = size, 0, None

    def take(self) -> tuple[LocalWorld, int]:
        if self.world is None or self.used % self.size == 0:
            if self.world is not None:
                self.world.close()
            self.world = LocalWorld(prefix="prog")
        self.used += 1
        self.world.clock = VirtualClock()
        return self.world, self.used


_POOL = _WorldPool()


def run_program(program: Program, handler: str) -> list[ObjectOutcome]:
    """Run a random schedule through the local runtime; one outcome per object."""
    world, number = _POOL.take()
    fault = FaultPlan.at_point(program.fault, program.times, program.how)
    # ORDER_IDENTITY=upload, as _run_one: each object's charge and record are read back by its
    # upload's reference and key (each object is its own upload, never uploaded twice here)
    runtime = LocalLambda(world, world.env(handler, RECORD_TTL_SECONDS=str(program.ttl), ORDER_IDENTITY="upload"),
                          fault=fault, retries=program.retries)
    accounts = [f"p{number}a{i}" for i in range(program.objects)]
    objects = [world.upload(f"{account}/order.csv") for account in accounts]
    events = [world.event(obj) for obj in objects]
    for index, at in sorted(program.deliveries, key=lambda d: d[1]):
        runtime.send(events[index], at=at)
    for jump in program.jumps:
        runtime.during(jump.step, _jumper(world, runtime, jump, events),
                       delivery=jump.delivery, attempt=jump.attempt)
    runtime.run()
    readback = _Readback(world, now=world.clock.now() + 3600)
    found = []
    for i, (obj, account) in enumerate(zip(objects, accounts)):
        fate = readback.fate(handler, obj, account)
        found.append(ObjectOutcome(i, fate.charges, fate.ledger, fate.record, len(fate.failures),
                                   fate.verdict, fate.flagged))
    return found


def _jumper(world: LocalWorld, runtime: Any, jump: Jump, events: list[dict[str, Any]]) -> Any:
    def act() -> None:
        world.clock.advance(jump.seconds)
        if jump.copy is not None:
            runtime.send_now(events[jump.copy])
    return act


def program_breaks(outcomes: Iterable[ObjectOutcome]) -> list[str]:
    """The objects a handler broke: charged twice, or lost or half-done silently."""
    return [f"object {o.index}: {o.verdict}" for o in outcomes if o.verdict in BREAKS]


def program_keyed_violations(outcomes: Iterable[ObjectOutcome]) -> list[str]:
    """keyed's invariants per object: at most one charge; done once, or visible (the
    failure queue, or a finding of the reconciliation job)."""
    problems = []
    for o in outcomes:
        if o.charges > 1:
            problems.append(f"object {o.index}: {o.charges} charges")
        elif o.verdict not in KEYED_OK and not (o.dlq or o.flagged):
            problems.append(f"object {o.index}: {o.verdict}, and nothing shows it")
    return problems


def breaks(outcome: Outcome) -> bool:
    """Money moved twice, or work lost or left half-done with nothing to alert anyone."""
    return outcome.verdict in BREAKS


def keyed_violations(result: Result) -> list[str]:
    """What is wrong with a `keyed` result; empty when its invariants hold."""
    o, problems = result.outcome, []
    if o.charges > 1:
        problems.append(f"{o.charges} charges")
    if o.verdict not in KEYED_OK:
        problems.append(f"verdict {o.verdict}")
    if not (o.verdict in ("exactly_once", "declined") or result.visible):
        problems.append("not done, and neither the failure queue nor reconciliation shows it")
    if o.verdict == "exactly_once" and result.flagged:
        problems.append(f"done once, yet reconciliation flags it: {', '.join(result.flagged)}")
    return problems


@dataclass(frozen=True)
class Tally:
    handler: str
    schedules: int
    verdicts: dict[str, int]
    caught: int  # broken schedules that the reconciliation job flags

    @property
    def broken(self) -> int:
        return sum(self.verdicts.get(v, 0) for v in BREAKS)


def tally(results: Iterable[Result]) -> list[Tally]:
    """Verdict counts per handler, handlers in the order they first appear."""
    verdicts: dict[str, Counter[str]] = {}
    caught: Counter[str] = Counter()
    for r in results:
        handler = r.outcome.scenario.handler
        verdicts.setdefault(handler, Counter())[r.outcome.verdict] += 1
        caught[handler] += breaks(r.outcome) and bool(r.flagged)
    return [Tally(h, sum(c.values()), dict(c), caught[h]) for h, c in verdicts.items()]


def table(tallies: Iterable[Tally], verdicts: tuple[str, ...] = MATRIX_VERDICTS) -> str:
    """The pinned table, as markdown: one row per handler (PROVIDER_VERDICTS adds `declined`)."""
    head = "| handler | schedules | breaks | caught by reconciliation | " + " | ".join(verdicts) + " |"
    rule = "| --- " * (4 + len(verdicts)) + "|"
    rows = [f"| {t.handler} | {t.schedules} | {t.broken} | {t.caught} | "
            + " | ".join(str(t.verdicts.get(v, 0)) for v in verdicts) + " |" for t in tallies]
    return "\n".join([head, rule, *rows])


def sentences(tallies: Iterable[Tally]) -> list[str]:
    return [f"{t.handler} breaks in {t.broken} of {t.schedules} schedules" for t in tallies]


def main() -> None:
    """`python -m idem.explore.schedules`: run every schedule and print the table."""
    results = run_schedules(all_schedules())
    tallies = tally(results)
    print(f"{len(results)} distinct schedules ({raw_count()} before merging twins)\n")
    print(table(tallies))
    print()
    print("\n".join(sentences(tallies)))
    theirs = run_schedules(provider_schedules())
    print(f"\nthe provider's own outcomes: {len(theirs)} distinct schedules\n")
    print(table(tally(theirs), PROVIDER_VERDICTS))


if __name__ == "__main__":
    main()
