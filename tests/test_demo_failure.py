"""Chapter 09's failure on real AWS: a wrapper around the entry point, counted in DynamoDB."""
from __future__ import annotations

import pytest

from idem.core.errors import ConfigError
from idem.core.events import s3_event
from idem.demo_failure import DemoFailure, app_from_environment
from idem.sim.runtime import LambdaContext


def invoke(world, app, obj):
    context = LambdaContext("req", "fn", world.clock.now() + 30, world.clock)
    return app.handle(s3_event(obj), context)


def test_after_charge_once_loses_the_first_answer_then_lets_the_retry_through(world):
    env = world.env("naive", FAILURE_POINT="after_charge", FAIL_TIMES="once")
    obj = world.upload("alice/order.csv")
    with pytest.raises(DemoFailure, match="after_charge"):
        invoke(world, app_from_environment(env, world.session, world.clock), obj)
    # A retry in another (cold) container still knows: the count is in the ledger table.
    invoke(world, app_from_environment(env, world.session, world.clock), obj)
    assert len(world.provider().charges()) == 2  # naive charged again: the demo's point
    assert [r.key for r in world.ledger().records()] == []  # the counter is not a record


def test_keyed_behind_the_same_failure_charges_once(world):
    env = world.env("keyed", FAILURE_POINT="after_charge", FAIL_TIMES="once")
    obj = world.upload("alice/order.csv")
    with pytest.raises(DemoFailure):
        invoke(world, app_from_environment(env, world.session, world.clock), obj)
    world.clock.advance(60)  # Lambda's retry, after the first lease ended
    invoke(world, app_from_environment(env, world.session, world.clock), obj)
    assert len(world.provider().charges()) == 1


def test_at_charge_always_never_moves_money(world):
    env = world.env("naive", FAILURE_POINT="at_charge", FAIL_TIMES="always")
    app = app_from_environment(env, world.session, world.clock)
    for _ in range(3):
        with pytest.raises(DemoFailure, match="before it was sent"):
            invoke(world, app, world.upload("alice/order.csv"))
    assert world.provider().charges() == []


def test_a_mistyped_failure_point_refuses_to_start(world):
    with pytest.raises(ConfigError, match="FAILURE_POINT"):
        app_from_environment(world.env("naive", FAILURE_POINT="later"), world.session, world.clock)
