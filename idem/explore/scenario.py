"""One scenario: what it is, how S3 delivers it, and how its outcome is read back.

A scenario is one upload, one fresh LocalWorld, and the local runtime doing what Lambda
does until nothing is left to retry. Its outcome is read back from the resources
themselves: the provider's charges, the ledger, the record, the failure queue.
`idem.explore.scenarios` runs them, for every handler.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..sim.faults import FaultPlan
from ..sim.runtime import Attempt, LocalLambda
from ..sim.world import LocalWorld
from .judge.verdicts import MATRIX_VERDICTS, completed, judge_run

DELIVERIES = ("single", "duplicate", "concurrent")
TIMES = ("once", "always")
VERDICTS = MATRIX_VERDICTS
ORDER_KEY = "alice/order-0001.csv"
DUPLICATE_AFTER = 5.0  # seconds: S3's second copy of the event, one after the other

#: The headline rows: (fault, times, delivery). `-` stands for "no fault, nothing to repeat".
HEADLINE = (
    ("none", "-", "single"),
    ("at_charge", "once", "single"),
    ("at_charge", "always", "single"),
    ("after_charge", "once", "single"),
    ("after_charge", "always", "single"),
    ("after_commit", "once", "single"),
    ("none", "-", "duplicate"),
    ("none", "-", "concurrent"),
)
OUTCOME_FIELDS = ("handler", "fault", "times", "delivery", "charges", "ledger", "attempts",
                  "dlq", "record", "completed", "dynamodb_calls", "verdict")


@dataclass(frozen=True)
class Scenario:
    handler: str
    fault: str = "none"
    times: str = "-"
    delivery: str = "single"
    how: str = "exception"  # or "crash"
    retries: int = 2
    timeout: float = 30.0
    reuse_containers: bool = True
    concurrent_at: str = "before_charge"  # the first invocation's step where the copy runs


@dataclass
class Outcome:
    scenario: Scenario
    charges: int
    ledger: int
    attempts: int
    dlq: int
    record: str
    completed: bool
    dynamodb_calls: int
    verdict: str
    trace: list[Attempt] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The outcome fields, as `sim --json` prints them."""
        s = self.scenario
        values = {"handler": s.handler, "fault": s.fault, "times": s.times, "delivery": s.delivery,
                  **{k: v for k, v in asdict(self).items() if k in OUTCOME_FIELDS}}
        return {name: values[name] for name in OUTCOME_FIELDS}


#: Powertools for AWS Lambda's idempotency utility, run by `idem.explore.powertools`.
POWERTOOLS = "powertools"


def fault_of(scenario: Scenario) -> FaultPlan:
    """The runtime's fault plan for a scenario: its point, its times, and how it fails."""
    return FaultPlan.at_point(scenario.fault, "once" if scenario.times == "-" else scenario.times,
                              scenario.how)


def deliver(runtime: LocalLambda, event: dict[str, Any], delivery: str, concurrent_at: str) -> None:
    """S3's side of a scenario: one delivery, two in a row, or two at once."""
    runtime.send(event)
    if delivery == "duplicate":
        runtime.send(event, at=DUPLICATE_AFTER)
    elif delivery == "concurrent":
        runtime.during(concurrent_at, lambda: runtime.send_now(event))


def read_outcome(world: LocalWorld, runtime: LocalLambda, scenario: Scenario,
                 has_done_state: bool, record_status: str | None = None) -> Outcome:
    charges = len(world.provider().charges())
    ledger = world.ledger()
    entries = ledger.entry("alice")[0]
    records = ledger.records()
    record = record_status or (str(records[0].status) if records else "-")
    failures = world.failure_queue()
    done = completed(charges, entries, record, has_done_state)
    return Outcome(
        scenario=scenario, charges=charges, ledger=entries, attempts=len(runtime.attempts),
        dlq=len(failures), record=record, completed=done,
        dynamodb_calls=sum(a.dynamodb_calls for a in runtime.attempts),
        verdict=judge_run(charges, done, len(failures), record),
        trace=list(runtime.attempts), items=ledger.items(), failures=failures)
