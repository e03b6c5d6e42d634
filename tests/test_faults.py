"""Fault injection: which arrivals fail, where the count lives, exception or crash."""
from __future__ import annotations

import pytest

from idem.local.faults import Crash, FaultInjector, FaultPlan, InjectedFault


def outcomes(injector, n, point="after_charge"):
    seen = []
    for _ in range(n):
        try:
            injector.at(point, "work")
            seen.append("pass")
        except InjectedFault:
            seen.append("fail")
    return seen


@pytest.mark.parametrize("times, expected", [
    ("once", ["fail", "pass", "pass"]),
    ("always", ["fail", "fail", "fail"]),
    ("1,3", ["fail", "pass", "fail"]),
])
def test_times_choose_the_failing_arrivals(world, times, expected):
    injector = FaultInjector(FaultPlan("after_charge", times), world.dynamodb, world.ledger_table, {})
    assert outcomes(injector, 3) == expected


def test_other_points_never_fail(world):
    injector = FaultInjector(FaultPlan("at_charge", "always"), world.dynamodb, world.ledger_table, {})
    assert outcomes(injector, 2, point="after_commit") == ["pass", "pass"]


def test_the_dynamodb_count_is_shared_between_containers(world):
    plan = FaultPlan("after_charge", "once")
    first = FaultInjector(plan, world.dynamodb, world.ledger_table, memory={})
    second = FaultInjector(plan, world.dynamodb, world.ledger_table, memory={})
    assert outcomes(first, 1) == ["fail"] and outcomes(second, 1) == ["pass"]


def test_the_memory_count_is_per_container_on_purpose(world):
    plan = FaultPlan("after_charge", "once", store="memory")
    first = FaultInjector(plan, world.dynamodb, world.ledger_table, memory={})
    second = FaultInjector(plan, world.dynamodb, world.ledger_table, memory={})
    assert outcomes(first, 1) == ["fail"] and outcomes(second, 1) == ["fail"]


def test_a_crash_is_not_an_exception():
    injector = FaultInjector(FaultPlan("at_charge", "always", how="crash", store="memory"), None, "t", {})
    with pytest.raises(Crash):
        try:
            injector.at("at_charge", "work")
        except Exception:  # what a handler's cleanup would catch: a crash must get past it
            pytest.fail("a crash was caught as an Exception")
    assert not issubclass(Crash, Exception)


@pytest.mark.parametrize("kwargs", [{"point": "later"}, {"how": "explode"}, {"times": "first"},
                                    {"store": "disk"}])
def test_bad_plans_are_refused(kwargs):
    with pytest.raises(ValueError):
        FaultPlan(**kwargs)
