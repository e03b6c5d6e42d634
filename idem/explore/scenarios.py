"""The scenario matrix: every handler against every fault point, time and delivery.

`idem.explore.scenario` says what one scenario is and how its outcome is read; this module
builds the matrix and runs each scenario, the core handlers here and Powertools through
`idem.explore.powertools`. The names of `scenario` are re-exported, so `scenarios.Scenario`
is the same class.
"""
from __future__ import annotations

import contextlib
import importlib.util
import itertools
from typing import Iterable

from ..core.patterns import HANDLERS, HAS_DONE_STATE
from ..sim.faults import PROVIDER_POINTS, Point
from ..sim.runtime import LocalLambda
from ..sim.stripe.server import loopback_stripe
from ..sim.world import LocalWorld
from .scenario import (DELIVERIES, DUPLICATE_AFTER, HEADLINE, ORDER_KEY, OUTCOME_FIELDS, POWERTOOLS, TIMES,
                       VERDICTS, Outcome, Scenario, deliver, fault_of, read_outcome)

__all__ = ["DELIVERIES", "DUPLICATE_AFTER", "HEADLINE", "ORDER_KEY", "OUTCOME_FIELDS", "POWERTOOLS",
           "PROVIDER_POINTS", "TIMES", "VERDICTS", "Outcome", "Scenario", "all_scenarios", "deliver",
           "fault_of", "handler_names", "headline_scenarios", "powertools_installed", "read_outcome",
           "run", "select"]


def powertools_installed() -> bool:
    return importlib.util.find_spec("aws_lambda_powertools") is not None


def handler_names() -> tuple[str, ...]:
    """The core handlers, and powertools where its package is installed."""
    return tuple(HANDLERS) + ((POWERTOOLS,) if powertools_installed() else ())


def run(scenario: Scenario, *, over_stripe: bool = False) -> Outcome:
    """Run one scenario in a fresh world and read its outcome back. `over_stripe`: the
    function charges through Stripe's SDK (the handler's adapter), aimed at a loopback Stripe
    that keeps the stand-in's rules (idem.sim.stripe.server)."""
    _check(scenario)
    if scenario.handler == POWERTOOLS:
        from . import powertools  # optional: needs aws-lambda-powertools, which the core never does

        return powertools.run(scenario)
    with LocalWorld() as world, (loopback_stripe(world) if over_stripe else contextlib.nullcontext()):
        runtime = LocalLambda(world, world.env(scenario.handler), fault=fault_of(scenario),
                              retries=scenario.retries,
                              timeout=scenario.timeout,
                              reuse_containers=scenario.reuse_containers)
        event = world.event(world.upload(ORDER_KEY))
        deliver(runtime, event, scenario.delivery, scenario.concurrent_at)
        runtime.run()
        return read_outcome(world, runtime, scenario, scenario.handler in HAS_DONE_STATE)


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
