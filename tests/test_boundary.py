"""Faults at the boundaries: which arrivals fail, before or after a call, exception or crash."""
from __future__ import annotations

import pytest

from idem.core.dynamo import to_item
from idem.sim.boundary import Visit, Watch, WatchedProvider
from idem.sim.faults import END, Boundary, Crash, FaultPlan, InjectedFault, Side
from idem.sim.sessions import watched_session


def put(world, key):
    watched_session().client("dynamodb").put_item(TableName=world.ledger_table,
                                                   Item=to_item({"pk": key}))


def stored(world, key):
    return "Item" in world.dynamodb.get_item(TableName=world.ledger_table, Key=to_item({"pk": key}))


def arrivals(watch, n, boundary=END):
    seen = []
    for _ in range(n):
        try:
            watch.arrive(Visit(1, 1, "work"), boundary)
            seen.append("pass")
        except InjectedFault:
            seen.append("fail")
    return seen


@pytest.mark.parametrize("times, expected", [
    ("once", ["fail", "pass", "pass"]),
    ("always", ["fail", "fail", "fail"]),
    ("1,3", ["fail", "pass", "fail"]),
])
def test_times_choose_the_failing_arrivals(times, expected):
    assert arrivals(Watch(FaultPlan(END, times)), 3) == expected


def test_arrivals_are_counted_per_piece_of_work():
    watch = Watch(FaultPlan(END, "once"))
    assert arrivals(watch, 1) == ["fail"]
    with pytest.raises(InjectedFault):
        watch.arrive(Visit(1, 1, "other work"), END)  # its own first arrival


def test_other_boundaries_never_fail():
    assert arrivals(Watch(FaultPlan.at_point("at_charge", "always")), 2) == ["pass", "pass"]


def test_a_fault_before_a_call_means_nothing_happened(world):
    watch = Watch(FaultPlan(Boundary("dynamodb:PutItem", 1, Side.BEFORE)))
    with watch.visiting(Visit(1, 1, "w")), pytest.raises(InjectedFault, match="before dynamodb:PutItem"):
        put(world, "k1")
    assert not stored(world, "k1")


def test_a_fault_after_a_call_loses_the_answer_but_not_the_effect(world):
    watch = Watch(FaultPlan(Boundary("dynamodb:PutItem", 1, Side.AFTER)))
    with watch.visiting(Visit(1, 1, "w")), pytest.raises(InjectedFault, match="answer .* was lost"):
        put(world, "k2")
    assert stored(world, "k2")


def test_the_nth_call_of_a_kind_is_its_own_boundary(world):
    visit = Visit(1, 1, "w")
    watch = Watch(FaultPlan(Boundary("dynamodb:PutItem", 2, Side.BEFORE)))
    with watch.visiting(visit):
        put(world, "first")
        with pytest.raises(InjectedFault, match="#2"):
            put(world, "second")
    assert stored(world, "first") and not stored(world, "second")
    assert [str(c.boundary) for c in visit.crossings] == [
        "before dynamodb:PutItem", "after dynamodb:PutItem", "before dynamodb:PutItem #2"]


def test_a_crash_is_not_an_exception_a_handler_can_catch():
    watch = Watch(FaultPlan(END, "once", how="crash"))
    with pytest.raises(Crash):
        watch.arrive(Visit(1, 1, "w"), END)
    assert not issubclass(Crash, Exception)


def test_outside_an_invocation_the_hooks_do_nothing(world):
    Watch(FaultPlan(Boundary("dynamodb:PutItem", 1, Side.BEFORE), "always"))
    put(world, "no-visit")  # no invocation is running on this thread
    assert stored(world, "no-visit")


def test_the_provider_call_is_a_boundary_and_a_copy_can_start_there(world):
    provider, started = WatchedProvider(world.provider()), []
    watch = Watch(FaultPlan.at_point("after_charge", "once"))
    watch.at(Boundary("provider:charge", 1, Side.BEFORE), lambda: started.append("copy"))
    with watch.visiting(Visit(1, 1, "w")), pytest.raises(InjectedFault):
        provider.charge(customer="alice", amount=500, currency="usd", reference="s3://b/k")
    assert started == ["copy"]
    assert len(world.provider().charges()) == 1  # the money moved; only the answer was lost


@pytest.mark.parametrize("kwargs, says", [({"point": "later"}, "unknown point 'later'"),
                                          ({"point": "at_charge", "times": "soon"}, "fault times"),
                                          ({"point": "at_charge", "how": "explode"}, "unknown how")])
def test_a_mistyped_fault_is_an_error_not_silence(kwargs, says):
    with pytest.raises(ValueError, match=says):
        FaultPlan.at_point(**kwargs)
