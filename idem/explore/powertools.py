"""The `powertools` handler in the scenario matrix, run through the local Lambda runtime.

The handler itself lives in `idem.sim.powertools_entry` (the module the runtime loads
per container). This module gives it what the matrix needs: a Powertools table on the
same moto backend, a runner that `idem.explore.scenarios.run` calls for this handler, the
mapping from Powertools' record status to the outcome's `record` field, and the exhaustive
schedules of `idem.explore.schedules` run for it, once per fix
(`python -m idem.explore.powertools` prints their table).

Its schedules add one fault point to the matrix's three: `after_ledger`, an error after the
ledger write has landed and before Powertools marks its record complete (the response to the
write is lost, or the function dies right after it). That is where Powertools deletes its
record with the books already written, so a claim about a fix must be measured there too.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..core.dynamo import from_item
from ..core.clock import VirtualClock
from . import scenario as scenarios
from . import schedules as S
from ..sim.faults import Boundary, FaultPlan, Side
from ..sim.powertools_entry import FIXES, MODE, powertools_time
from ..sim.runtime import LocalLambda, on_clock
from ..sim.world import REGION, LocalWorld

ENTRY = "idem.sim.powertools_entry"
HANDLER_MODULE = "idem.sim.powertools_handler"  # the handler as a reader writes it
HANDLER = f"{HANDLER_MODULE}:lambda_handler"
#: Powertools' record statuses, in the matrix's words.
RECORD_STATUS = {"INPROGRESS": "in_progress", "COMPLETED": "done"}
UPLOAD_GAP = 600.0  # seconds between re-uploads of the same name in run_uploads
AFTER_LEDGER = "after_ledger"
#: The ledger write of each fix, where `after_ledger` fails: the function's first UpdateItem
#: (add_entry; Powertools' own completion is the second), or book_once's conditional put
#: (Powertools' claim is the first PutItem).
LEDGER_WRITE = {"none": Boundary("dynamodb:UpdateItem", 1, Side.AFTER),
                "catch": Boundary("dynamodb:UpdateItem", 1, Side.AFTER),
                "provider_key": Boundary("dynamodb:UpdateItem", 1, Side.AFTER),
                "book_once": Boundary("dynamodb:PutItem", 2, Side.AFTER)}


@contextlib.contextmanager
def idempotency_table(world: LocalWorld) -> Iterator[str]:
    """A table shaped as Powertools expects (`id` key, TTL on `expiration`), for one world."""
    name = f"{world.prefix}-idempotency"
    world.dynamodb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
    world.dynamodb.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"})
    try:
        yield name
    finally:
        world.dynamodb.delete_table(TableName=name)


def powertools_items(world: LocalWorld, table: str) -> list[dict[str, Any]]:
    """Every Powertools record in `table`, plain values, sorted by key."""
    pages = world.dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return sorted((from_item(item) for page in pages for item in page["Items"]),
                  key=lambda item: item["id"])


def record_status(items: list[dict[str, Any]]) -> str:
    """The outcome's `record`: in_progress, done, or `-` when Powertools deleted it."""
    charge_records = [item for item in items if item["id"].startswith("charge#")]
    if not charge_records:
        return "-"
    raw = charge_records[0]["status"]
    return RECORD_STATUS.get(raw, raw.lower())


def summary(outcome: scenarios.Outcome) -> dict[str, Any]:
    """Deliveries, charges, failure queue, calls and the errors seen: one line of a demo."""
    errors = sorted({a.error.split(":")[0] for a in outcome.trace if a.error})
    return {"deliveries": len({a.delivery for a in outcome.trace}), "charges": outcome.charges,
            "dlq": outcome.dlq, "dynamodb_calls": outcome.dynamodb_calls, "errors": ", ".join(errors) or "-"}


def env_for(world: LocalWorld, scenario: scenarios.Scenario, table: str,
            fix: str = "none", **settings: str) -> dict[str, str]:
    """The function's environment: the core settings, the Powertools table and options."""
    if fix not in FIXES:
        raise ValueError(f"unknown fix {fix!r}; choose from {', '.join(FIXES)}")
    return {**world.env(scenario.handler), "IDEMPOTENCY_TABLE": table,
            "POWERTOOLS_FIX": fix, **settings}


def runtime_for(world: LocalWorld, env: dict[str, str], scenario: scenarios.Scenario,
                fault: FaultPlan | None = None) -> LocalLambda:
    return LocalLambda(world, env, fault=fault or scenarios.fault_of(scenario), retries=scenario.retries,
                       timeout=scenario.timeout,
                       reuse_containers=scenario.reuse_containers, entry=ENTRY)


def run(scenario: scenarios.Scenario, fix: str = "none", fault: FaultPlan | None = None,
        **settings: str) -> scenarios.Outcome:
    """Run one scenario of the powertools handler in a fresh world and read its outcome.

    `fix` picks a way to close Powertools' gap (see powertools_entry.FIXES); `settings`
    are extra environment variables (POWERTOOLS_LOCAL_CACHE="1", ...); `fault`, if given,
    replaces the scenario's named fault point with any boundary.
    """
    if scenario.handler != MODE:
        raise ValueError(f"this runner runs the {MODE} handler, not {scenario.handler!r}")

    def stage(world: LocalWorld, runtime: LocalLambda) -> None:
        event = world.event(world.upload(scenarios.ORDER_KEY))
        scenarios.deliver(runtime, event, scenario.delivery, scenario.concurrent_at)

    return _run(scenario, stage, fix=fix, settings=settings, fault=fault)


def run_uploads(bodies: Sequence[bytes], *, versioned: bool = True, gap: float = UPLOAD_GAP,
                redeliver_after: float | None = None, fix: str = "none",
                **settings: str) -> scenarios.Outcome:
    """Upload the order once per body, `gap` seconds apart, each event delivered once, and
    again `redeliver_after` seconds later if given (a late duplicate). No faults."""
    if not bodies:
        raise ValueError("give at least one body to upload")

    def stage(world: LocalWorld, runtime: LocalLambda) -> None:
        for n, body in enumerate(bodies):
            event = world.event(world.upload(scenarios.ORDER_KEY, body))
            runtime.send(event, at=n * gap)
            if redeliver_after is not None:
                runtime.send(event, at=n * gap + redeliver_after)

    delivery = "single" if redeliver_after is None else "duplicate"
    return _run(scenarios.Scenario(MODE, delivery=delivery), stage, fix=fix,
                settings=settings, versioned=versioned)


def run_handler(bodies: Sequence[bytes], *, versioned: bool = True, gap: float = UPLOAD_GAP,
                redeliver_after: float | None = None, fault: FaultPlan | None = None) -> scenarios.Outcome:
    """`run_uploads` for the handler as a reader writes it (`idem.sim.powertools_handler`),
    which the runtime loads as Lambda would: settings from the environment, boto3's default
    session, and its `make_provider` swapped for the provider stand-in. `fault`: any boundary."""
    if not bodies:
        raise ValueError("give at least one body to upload")
    scenario = scenarios.Scenario(MODE, delivery="single" if redeliver_after is None else "duplicate")
    with LocalWorld(versioned=versioned) as world, idempotency_table(world) as table, \
            powertools_time(world.clock):
        env = {"IDEMPOTENCY_TABLE": table, "LEDGER_TABLE": world.ledger_table,
               "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION}  # Lambda sets both
        runtime = LocalLambda(world, env, fault=fault, handler=HANDLER)
        for n, body in enumerate(bodies):
            event = world.event(world.upload(scenarios.ORDER_KEY, body))
            runtime.send(event, at=n * gap)
            if redeliver_after is not None:
                runtime.send(event, at=n * gap + redeliver_after)
        runtime.run()
        # read back on the virtual clock: the failure record carries its time, and in real time
        # moto would find it past the queue's retention and drop it
        with on_clock(world.clock):
            items = powertools_items(world, table)
            statuses = sorted({RECORD_STATUS.get(item["status"], item["status"]) for item in items})
            outcome = scenarios.read_outcome(world, runtime, scenario, True, ", ".join(statuses) or "-")
        outcome.items = outcome.items + items
        return outcome


def _run(scenario: scenarios.Scenario, stage: Callable[[LocalWorld, LocalLambda], None], *,
         fix: str, settings: dict[str, str], versioned: bool = True,
         fault: FaultPlan | None = None) -> scenarios.Outcome:
    with LocalWorld(versioned=versioned) as world, idempotency_table(world) as table:
        runtime = runtime_for(world, env_for(world, scenario, table, fix, **settings), scenario, fault)
        stage(world, runtime)
        runtime.run()
        with on_clock(world.clock):  # as in run_handler: the records carry the virtual time
            items = powertools_items(world, table)
            outcome = scenarios.read_outcome(world, runtime, scenario, True, record_status(items))
        outcome.items = outcome.items + items
        return outcome



# -- the exhaustive schedules, for Powertools -------------------------------------------------
def fault_plan(scenario: scenarios.Scenario, fix: str) -> FaultPlan:
    """The runtime's fault plan: a matrix point, or `after_ledger` at this fix's ledger write."""
    if scenario.fault == AFTER_LEDGER:
        return FaultPlan(LEDGER_WRITE[fix], scenario.times, scenario.how)
    return scenarios.fault_of(scenario)


def all_schedules() -> list[scenarios.Scenario]:
    """The matrix's distinct schedules for Powertools, plus each `after_charge` schedule again
    at `after_ledger`. Both come after the charge and before the last step, so the same
    schedules are twins of each other (see schedules.trim) at the two points."""
    named = S.all_schedules([MODE])
    return named + [dataclasses.replace(s, fault=AFTER_LEDGER) for s in named if s.fault == "after_charge"]


def run_schedules(schedules: Iterable[scenarios.Scenario], fix: str = "none",
                  batch: int = 20) -> list[S.Result]:
    """Run Powertools' schedules with `fix`, `batch` to a world, as schedules.run_schedules
    runs the core handlers' (one object, one account and a fresh clock for each)."""
    schedules = list(schedules)
    if fix not in FIXES:
        raise ValueError(f"unknown fix {fix!r}; choose from {', '.join(FIXES)}")
    results: list[S.Result] = []
    for start in range(0, len(schedules), batch):
        with LocalWorld(prefix="ptsched") as world, idempotency_table(world) as table:
            runs = [_run_one(world, table, s, fix, start + i)
                    for i, s in enumerate(schedules[start:start + batch])]
            results.extend(S.read_back(world, runs))
    return results


def _run_one(world: LocalWorld, table: str, scenario: scenarios.Scenario, fix: str,
             number: int) -> S.ScheduleRun:
    world.clock = VirtualClock()
    account = f"acct{number:05d}"
    runtime = runtime_for(world, env_for(world, scenario, table, fix), scenario,
                          fault_plan(scenario, fix))
    obj = world.upload(f"{account}/order.csv")
    scenarios.deliver(runtime, world.event(obj), scenario.delivery, scenario.concurrent_at)
    runtime.run()
    if scenario.delivery != "single" and 2 not in {a.delivery for a in runtime.attempts}:
        raise AssertionError(f"{S.label(scenario)}: the second copy was never delivered")
    items = powertools_items(world, table)
    for item in items:  # this schedule's records only: the next one starts with an empty table
        world.dynamodb.delete_item(TableName=table, Key={"id": {"S": item["id"]}})
    return S.ScheduleRun(scenario, obj, account, runtime.attempts, record_status(items))


def tallies(schedules: Sequence[scenarios.Scenario], fixes: Sequence[str] = FIXES) -> list[S.Tally]:
    """One row per fix: `powertools, <fix>` and its verdict counts over `schedules`."""
    return [dataclasses.replace(t, handler=f"{MODE}, {fix}")
            for fix in fixes for t in S.tally(run_schedules(schedules, fix))]


def main() -> None:
    """`python -m idem.explore.powertools`: every Powertools schedule, once per fix."""
    schedules = all_schedules()
    print(f"{len(schedules)} distinct schedules per fix\n")
    print(S.table(tallies(schedules)))


if __name__ == "__main__":
    main()
