"""The scenario matrix: every handler against every fault point, time and delivery.

A scenario is one upload, one fresh LocalWorld, and the local runtime doing what Lambda
does until nothing is left to retry. Its outcome is read back from the resources
themselves: the provider's charges, the ledger, the record, the failure queue.
"""
from __future__ import annotations

import importlib.util
import itertools
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from .boundary import PROVIDER_POINTS, FaultPlan, Point
from .verdicts import MATRIX_VERDICTS, completed, judge_run
from ..core.patterns import HANDLERS, HAS_DONE_STATE
from .runtime import Attempt, LocalLambda
from .world import LocalWorld

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


#: Powertools for AWS Lambda's idempotency utility, run by `idem.local.powertools`.
POWERTOOLS = "powertools"


def powertools_installed() -> bool:
    return importlib.util.find_spec("aws_lambda_powertools") is not None


def handler_names() -> tuple[str, ...]:
    """The core handlers, and powertools where its package is installed."""
    return tuple(HANDLERS) + ((POWERTOOLS,) if powertools_installed() else ())


def run(scenario: Scenario) -> Outcome:
    """Run one scenario in a fresh world and read its outcome back."""
    _check(scenario)
    if scenario.handler == POWERTOOLS:
        from .powertools import run as run_powertools

        return run_powertools(scenario)
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env(scenario.handler), fault=fault_of(scenario),
                              retries=scenario.retries,
                              timeout=scenario.timeout,
                              reuse_containers=scenario.reuse_containers)
        event = world.event(world.upload(ORDER_KEY))
        deliver(runtime, event, scenario.delivery, scenario.concurrent_at)
        runtime.run()
        return read_outcome(world, runtime, scenario, scenario.handler in HAS_DONE_STATE)


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


def _check(scenario: Scenario) -> None:
    if scenario.handler not in handler_names():
        raise ValueError(f"unknown handler {scenario.handler!r}; choose from {', '.join(handler_names())}")
    fault_of(scenario)  # names the fault point, times and how, or says what is valid
    if scenario.delivery not in DELIVERIES:
        raise ValueError(f"unknown delivery {scenario.delivery!r}; choose from {', '.join(DELIVERIES)}")
    if (scenario.fault == "none") != (scenario.times == "-"):
        raise ValueError("times is '-' exactly when the fault is 'none'")


def all_scenarios(handlers: Iterable[str] | None = None, provider: bool = False) -> list[Scenario]:
    """The whole matrix: every fault point x times x delivery, for each handler; with
    `provider`, the provider's own outcomes (PROVIDER_POINTS) as fault points too."""
    found = []
    points = [p.value for p in Point] + (list(PROVIDER_POINTS) if provider else [])
    for handler in handlers or handler_names():
        for fault, times, delivery in itertools.product(points, TIMES + ("-",), DELIVERIES):
            if (fault == "none") == (times == "-"):
                found.append(Scenario(handler, fault, times, delivery))
    return found


def headline_scenarios(handlers: Iterable[str] | None = None) -> list[Scenario]:
    return [Scenario(h, f, t, d) for f, t, d in HEADLINE for h in handlers or HANDLERS]


def select(scenarios: Iterable[Scenario], **wanted: str | None) -> list[Scenario]:
    """Keep the scenarios whose fields equal every non-None filter."""
    return [s for s in scenarios
            if all(v is None or getattr(s, k) == v for k, v in wanted.items())]
