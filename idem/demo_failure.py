"""Chapter 09's failure on real AWS: the core entry point, wrapped. Not part of what you ship.

The demo stack fails on purpose so that you can watch Lambda retry: with FAILURE_POINT set to
`after_charge`, the provider charges and its answer is lost on the way back; with `at_charge`,
the call fails before it is sent. FAIL_TIMES says on which arrivals per upload: `once` (the
first) or `always`. The handler and the entry point are untouched: this module hands the entry
point a provider client that fails at that boundary, as the local runtime does on moto.

The arrival count lives in the ledger table, so every container sees it. A count in module
memory would reset in every cold container and fail again: the mistake the article's author
made while staging this very demo. template.yaml names this module as the function's handler
only when FailurePoint is not `none`; the deploy tool ships it beside idem/core/ for the demo.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import boto3

from .core import entry, settings
from .core.clock import Clock, SystemClock
from .core.dynamo import to_item, values
from .core.errors import IdemError

POINTS = ("none", "at_charge", "after_charge")
TIMES = ("once", "always")
COUNTER_PREFIX = "demo-failure#"  # the ledger table's items that count arrivals


class DemoFailure(IdemError):
    """The failure the demo stack asked for."""


class FailingProvider:
    """A provider client that fails at the demo's point, on the demo's arrivals."""

    def __init__(self, inner: Any, dynamodb: Any, table: str, point: str, times: str) -> None:
        self.inner, self.dynamodb, self.table, self.point, self.times = inner, dynamodb, table, point, times

    def charge(self, **request: Any) -> Any:
        if self.point == "at_charge" and self._fails(request["reference"]):
            raise DemoFailure("demo failure at_charge: the provider call failed before it was sent")
        charge = self.inner.charge(**request)
        if self.point == "after_charge" and self._fails(request["reference"]):
            raise DemoFailure(f"demo failure after_charge: {charge.id} was made, its answer was lost")
        return charge

    def _fails(self, reference: str) -> bool:
        if self.times == "always":
            return True
        counted = self.dynamodb.update_item(
            TableName=self.table, Key=to_item({"pk": f"{COUNTER_PREFIX}{reference}"}),
            UpdateExpression="ADD arrivals :one", ExpressionAttributeValues=values(one=1),
            ReturnValues="UPDATED_NEW")
        return int(counted["Attributes"]["arrivals"]["N"]) == 1


def app_from_environment(env: Mapping[str, str], session: Any = None,
                         clock: Clock | None = None) -> entry.App:
    """The entry point's App, with the provider client wrapped as the demo settings say."""
    clock = clock or SystemClock()
    core = settings.Settings.from_env(env)
    point = settings.one_of(env, "FAILURE_POINT", "none", POINTS)
    times = settings.one_of(env, "FAIL_TIMES", "once", TIMES)
    dynamodb = (session or boto3).client("dynamodb")
    provider = entry.make_provider(core, clock, session)
    if point != "none":
        provider = FailingProvider(provider, dynamodb, core.ledger_table, point, times)
    return entry.App.from_environment(env, session=session, clock=clock, provider=provider)


_app: entry.App | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls on the demo stack when FailurePoint is set."""
    global _app
    if _app is None:
        _app = app_from_environment(os.environ)
    return _app.handle(event, context)
