"""Fault injection: make an invocation fail at a chosen point, on chosen attempts.

Which attempt this is cannot be known from inside Lambda (retries carry the same event
and request id), so the injector counts how many times execution has reached the fault
point for this piece of work. That count lives in DynamoDB by default, where every
container sees it. The `memory` store keeps it in the container's module globals instead:
the mistake the article's author made while staging the demo, kept here to be shown.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..core.dynamo import to_item, values

FAULT_POINTS = ("none", "at_charge", "after_charge", "after_commit")
HOW = ("exception", "crash")
STORES = ("dynamodb", "memory")


class InjectedFault(RuntimeError):
    """The error a fault point raises: an ordinary exception, so `except Exception` sees it."""


class Crash(BaseException):
    """The invocation dies here: no except clause of the handler runs (locally)."""


@dataclass(frozen=True)
class FaultPlan:
    point: str = "none"
    times: str = "once"  # "once", "always", or the arrivals that fail, e.g. "1,3"
    how: str = "exception"
    store: str = "dynamodb"

    def __post_init__(self) -> None:
        for name, value, allowed in (("point", self.point, FAULT_POINTS), ("how", self.how, HOW),
                                     ("store", self.store, STORES)):
            if value not in allowed:
                raise ValueError(f"fault {name} {value!r} is not one of {', '.join(allowed)}")
        self.fails_on(1)  # validates `times`

    def fails_on(self, arrival: int) -> bool:
        """Does the `arrival`-th visit to the fault point fail?"""
        if self.times == "once":
            return arrival == 1
        if self.times == "always":
            return True
        try:
            chosen = {int(part) for part in self.times.split(",") if part.strip()}
        except ValueError:
            raise ValueError(f"fault times {self.times!r}: use once, always, or numbers like 1,3") from None
        return arrival in chosen

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "FaultPlan":
        """FAILURE_POINT, FAIL_TIMES, FAIL_HOW and FAIL_STORE, as the template sets them."""
        return cls(point=env.get("FAILURE_POINT", "none") or "none",
                   times=env.get("FAIL_TIMES", "once") or "once",
                   how=env.get("FAIL_HOW", "exception") or "exception",
                   store=env.get("FAIL_STORE", "dynamodb") or "dynamodb")


def exit_process() -> None:
    """How a crash looks on real Lambda: the runtime process dies mid-invocation."""
    os._exit(1)


def raise_crash() -> None:
    raise Crash("the function crashed here (no cleanup runs)")


class FaultInjector:
    def __init__(self, plan: FaultPlan, client: Any, table: str,
                 memory: dict[str, int], crash: Callable[[], None] = raise_crash) -> None:
        self.plan = plan
        self.client = client
        self.table = table
        self.memory = memory  # the container's module globals: survives only while warm
        self.crash = crash

    def at(self, point: str, work_key: str) -> None:
        """Fail here if the plan says so for this arrival at `point`."""
        if point != self.plan.point:
            return
        arrival = self._count_arrival(f"faultcount#{point}#{work_key}")
        if not self.plan.fails_on(arrival):
            return
        if self.plan.how == "crash":
            self.crash()
        raise InjectedFault(f"injected failure {point} (arrival {arrival}); Lambda will retry")

    def _count_arrival(self, counter_key: str) -> int:
        if self.plan.store == "memory":
            self.memory[counter_key] = self.memory.get(counter_key, 0) + 1
            return self.memory[counter_key]
        response = self.client.update_item(
            TableName=self.table, Key=to_item({"pk": counter_key}),
            UpdateExpression="ADD arrivals :one", ExpressionAttributeValues=values(one=1),
            ReturnValues="UPDATED_NEW")
        return int(response["Attributes"]["arrivals"]["N"])
