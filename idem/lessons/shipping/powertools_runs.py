"""Chapter 08's runs of Powertools, as table rows: the faults it meets and the options it offers.

The chapter shows the tables; the rows and the faults are built here, so that no helper is
defined in the chapter itself.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from ...explore import powertools as pt
from ...sim.faults import Boundary, FaultPlan, Side
from ...sim.world import LocalWorld

#: The chapter's world and Powertools table, held open for the kernel's life (as every chapter's
#: world is): a context manager left unreferenced would delete its table when collected.
_OPEN = ExitStack()

#: An error right after every charge call: a poison event.
POISON = FaultPlan(Boundary("provider:charge", 1, Side.AFTER), "always")


def chapter_world() -> tuple[LocalWorld, str]:
    """A fresh local world and a Powertools idempotency table in it (`pt.idempotency_table`)."""
    world = _OPEN.enter_context(LocalWorld())
    return world, _OPEN.enter_context(pt.idempotency_table(world))


def after_ledger(how: str) -> FaultPlan:
    """Fail once right after the handler's ledger put (its first watched PutItem)."""
    return FaultPlan(Boundary("dynamodb:PutItem", 1, Side.AFTER), "once", how)


def handler_row(run: str, outcome: Any) -> dict[str, Any]:
    """One row of the handler table: what a run delivered, charged, booked and queued."""
    seen = pt.summary(outcome)
    return {"run": run, "deliveries": seen["deliveries"], "charges": outcome.charges,
            "ledger": outcome.ledger, "failure queue": outcome.dlq}


def option_row(option: str, outcome: Any) -> dict[str, Any]:
    """One row of the options table: an option's deliveries, charges, queue, calls and errors."""
    seen = pt.summary(outcome)
    return {"run below as": option, "deliveries": seen["deliveries"], "charges": seen["charges"],
            "failure queue": seen["dlq"], "DynamoDB calls": seen["dynamodb_calls"],
            "errors raised": seen["errors"].replace("Runtime.", "")}


def fixes_frame(fix_runs: list[tuple[str, Any]], fixes: list[Any]) -> Any:
    """The closing-the-gap runs as one row per fix and one column per fault and how it struck:
    each cell the verdict, then the charges the provider made / the charges the ledger booked."""
    import pandas as pd

    rows = [{"fix": fix, "fault": f"{s.fault}, {s.how}",
             "cell": f"{o.verdict} {o.charges}/{o.ledger}"}
            for (fix, s), o in zip(fix_runs, fixes)]
    frame = pd.DataFrame(rows)
    table = frame.pivot(index="fix", columns="fault", values="cell")
    table.columns.name = None
    return table.loc[list(dict.fromkeys(frame["fix"])), list(dict.fromkeys(frame["fault"]))]
