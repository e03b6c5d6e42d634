"""The `powertools` handler in the scenario matrix, run through the local Lambda runtime.

The handler itself lives in `idem.sim.powertools_entry` (the module the runtime loads
per container). This module gives it what the matrix needs: a Powertools table on the
same moto backend, a runner that `idem.explore.scenarios.run` calls for this handler, and the
mapping from Powertools' record status to the outcome's `record` field.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

from ..core.dynamo import from_item
from . import scenario as scenarios
from ..sim.boundary import FaultPlan
from ..sim.powertools_entry import FIXES, MODE
from ..sim.runtime import LocalLambda
from ..sim.world import LocalWorld

ENTRY = "idem.sim.powertools_entry"
#: Powertools' record statuses, in the matrix's words.
RECORD_STATUS = {"INPROGRESS": "in_progress", "COMPLETED": "done"}
UPLOAD_GAP = 600.0  # seconds between re-uploads of the same name in run_uploads


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


def _run(scenario: scenarios.Scenario, stage: Callable[[LocalWorld, LocalLambda], None], *,
         fix: str, settings: dict[str, str], versioned: bool = True,
         fault: FaultPlan | None = None) -> scenarios.Outcome:
    with LocalWorld(versioned=versioned) as world, idempotency_table(world) as table:
        runtime = runtime_for(world, env_for(world, scenario, table, fix, **settings), scenario, fault)
        stage(world, runtime)
        runtime.run()
        items = powertools_items(world, table)
        outcome = scenarios.read_outcome(world, runtime, scenario, True, record_status(items))
        outcome.items = outcome.items + items
        return outcome

