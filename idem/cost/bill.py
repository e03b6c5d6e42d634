"""What each pattern costs on DynamoDB's bill, per upload, measured on the real requests it makes.

Calls hide the difference that matters: a transaction of three items is one call and six write
units. For each handler this runs one upload through the local runtime three ways and meters
every request the function makes with `idem.cost.capacity` (sizes from the items themselves,
units by DynamoDB's on-demand rules, dollars at `capacity.US_EAST_1`):

- `first`: the first delivery of an upload;
- `duplicate`: S3 delivering the same event again, after the first finished;
- `retry`: the provider's answer lost after it charged, and Lambda's retry a minute later.

The provider stand-in's own requests are the provider's bill, not the function's, and are not
metered (they go through another client). Powertools' records live in their own table.

Each bill also says how much of its write units went into global secondary indexes
(`index_wru`: "every write to the table that adds, updates or deletes an indexed item also
writes the index", capacity.GSI_WRITES) and how many S3 GETs the function made (`s3_gets`:
keyed reads the order file, with GetObject, to learn its order_id). S3 bills a GET per request,
not per unit: `s3_usd_per_million` prices them at idem/deploy/prices.py's S3 GET price, apart
from DynamoDB's dollars.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Any, Iterator

from ..sim.faults import FaultPlan
from ..sim.sessions import watched_session
from .capacity import Units, dollars_per_million_uploads
from .recorder import CapacityRecorder
from ..deploy.prices import PRICES
from ..sim.runtime import LocalLambda
from ..sim.stripe.server import loopback_stripe
from ..sim.world import LocalWorld
from .commit_designs import measure as measure_designs
from ..explore.powertools import ENTRY, idempotency_table

CASES = ("first", "duplicate", "retry")
HANDLERS = ("naive", "claim_first", "robust", "keyed", "powertools")
#: keyed charging through Stripe's SDK (its adapter) against the loopback Stripe: metered when
#: asked for by name (`bills(("keyed_stripe",))`, as `idem bench` does), beside keyed.
OVER_STRIPE = "keyed_stripe"
ORDER_KEY = "alice/order-0001.csv"


@dataclass(frozen=True)
class Bill:
    """One handler's requests for one upload in one case, as DynamoDB bills them."""

    handler: str
    case: str
    calls: int  # DynamoDB calls
    wru: float
    rru: float
    index_wru: float = 0.0  # the part of `wru` written into global secondary indexes
    s3_gets: int = 0  # S3 GetObject requests (keyed: the order file), billed by S3, not DynamoDB

    @property
    def dollars_per_million(self) -> float:
        """DynamoDB's dollars per million uploads (on-demand, capacity.US_EAST_1)."""
        return round(dollars_per_million_uploads(self.wru, self.rru), 4)

    @property
    def s3_dollars_per_million(self) -> float:
        """S3's dollars per million uploads for the function's GETs (prices.PRICES["s3_get"])."""
        return round(self.s3_gets * 1000 * PRICES["s3_get"].usd, 4)

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "usd_per_million": self.dollars_per_million,
                "s3_usd_per_million": self.s3_dollars_per_million}


@contextlib.contextmanager
def _function_world(handler: str) -> Iterator[tuple[LocalWorld, dict[str, str], str]]:
    """A fresh world, the function's environment, and the entry module for `handler`."""
    with LocalWorld(prefix="bill") as world:
        if handler == "powertools":

            with idempotency_table(world) as table:
                yield world, {**world.env(handler), "IDEMPOTENCY_TABLE": table}, ENTRY
        elif handler == OVER_STRIPE:
            with loopback_stripe(world):
                yield world, world.env("keyed"), "idem.core.entry"
        else:
            yield world, world.env(handler), "idem.core.entry"


def measure(handler: str, case: str, key: str = ORDER_KEY, **env: str) -> Bill:
    """Meter `handler`'s requests for one upload of `key` in `case` (one of CASES); `env`
    adds to the function's environment (ORDER_IDENTITY="object-name", say)."""
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; choose one of {', '.join(CASES)}")
    fault = FaultPlan.at_point("after_charge", "once") if case == "retry" else None
    with _function_world(handler) as (world, function_env, entry):
        runtime = LocalLambda(world, {**function_env, **env}, fault=fault, entry=entry)
        event = world.event(world.upload(key))
        if case == "duplicate":  # the first delivery, unmetered
            runtime.send(event)
            runtime.run()
        before = len(runtime.attempts)
        with CapacityRecorder(watched_session().client("dynamodb")) as meter:
            runtime.send(event)
            runtime.run()
        total: Units = meter.summary().total
        index = sum(request.index_wru for request in meter.requests)
        gets = sum(a.calls.get("s3:GetObject", 0) for a in runtime.attempts[before:])
    return Bill(handler, case, int(total.calls), total.wru, total.rru, index, gets)


def bills(handlers: tuple[str, ...] = HANDLERS) -> list[Bill]:
    """Every handler in every case."""
    return [measure(h, c) for h in handlers for c in CASES]


def commit_designs(lines: int = 40) -> list[Any]:
    """keyed's commit designs side by side (`idem.cost.commit_designs`): what each writes
    per first delivery and duplicate, and what reading one account's totals costs."""
    return measure_designs(lines)
