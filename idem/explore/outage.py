"""A 6-hour payment-provider outage under steady uploads, on the local runtime's virtual clock.

Two shapes of the same stack meet the same outage (the provider answers 503 to every charge for
`outage_hours`, then recovers):

- **sqs** (prod): S3 -> SQS -> Lambda. Each upload's event waits in the queue; the handler reports
  the failed ones in `batchItemFailures`; each comes back after the visibility timeout, up to
  maxReceiveCount receives, then the dead-letter queue. Sized by idem/core/buffer.py (PROD: 360 s,
  75 receives: 7.4 hours of retries), which template.yaml's UploadQueue carries too.
- **s3** (the demo): S3 invokes the function asynchronously. Lambda retries an error twice, about
  1 and 3 minutes later (idem/sim/runtime/delays.py RETRY_DELAYS), then sends the event to the on-failure
  queue: every order of the outage is parked there, for a person to redrive.

`run_outage` returns what became of every order: charged once, twice, not at all; in the
dead-letter / failure queue; and the time from recovery to the last charge (the drain).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..core.buffer import PROD, BufferSizing
from ..core.errors import ProviderUnavailable
from ..sim.runtime import LocalLambda, on_clock
from ..sim.triggers import SqsFedLambda, SqsMapping
from ..sim.world import LocalWorld

HOUR = 3600.0
SHAPES = ("sqs", "s3")


class Outage:
    """The provider, failing every charge with 503 while the clock is in [start, end)."""

    def __init__(self, inner: Any, clock: Any, start: float, end: float) -> None:
        self.inner, self.clock, self.start, self.end = inner, clock, start, end
        self.refused = 0

    def charge(self, *args: Any, **kwargs: Any) -> Any:
        if self.start <= self.clock.now() < self.end:
            self.refused += 1
            raise ProviderUnavailable("503: the provider is down (the scenario's outage); nothing was executed")
        return self.inner.charge(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass(frozen=True)
class OutageResult:
    shape: str
    orders: int
    charged_once: int
    charged_twice: int
    not_charged: int
    parked: int  # messages in the dead-letter queue (sqs) or invocation records in the failure queue (s3)
    invocations: int
    refused: int  # charges the provider refused during the outage
    drain_seconds: float  # from recovery to the charge of the last order that arrived before it (0: none waited)

    @property
    def holds(self) -> bool:
        """Every order charged exactly once, none left waiting for a person."""
        return self.charged_once == self.orders and not (self.charged_twice or self.not_charged or self.parked)

    def render(self) -> str:
        return (f"{self.shape}: {self.orders} orders, {self.charged_once} charged once, {self.charged_twice} twice, "
                f"{self.not_charged} not charged, {self.parked} parked in the "
                f"{'dead-letter' if self.shape == 'sqs' else 'failure'} queue; {self.invocations} invocations, "
                f"{self.refused} charges refused by the provider; the last waiting order charged {self.drain_seconds:.0f} s "
                "after it recovered")


def run_outage(shape: str = "sqs", *, before_hours: float = 1, outage_hours: float = 6, after_hours: float = 1,
               every_seconds: float = 60, sizing: BufferSizing = PROD) -> OutageResult:
    """Uploads every `every_seconds` for before + outage + after hours; the provider down for the
    middle `outage_hours`. The runtime runs until nothing is left to do."""
    if shape not in SHAPES:
        raise ValueError(f"shape is one of {', '.join(SHAPES)}; got {shape!r}")
    with LocalWorld(prefix=f"outage-{shape}", provider_in_memory=True) as world:
        t0 = world.clock.now()
        start, end = t0 + before_hours * HOUR, t0 + (before_hours + outage_hours) * HOUR
        outage: list[Outage] = []

        def wrap(stand_in: Any) -> Outage:
            outage.append(Outage(stand_in, world.clock, start, end))
            return outage[-1]

        world.wrap_provider = wrap
        env = {**world.env("keyed"), "FUNCTION_TIMEOUT_SECONDS": str(sizing.function_timeout_seconds),
               "AWS_DEFAULT_REGION": "us-east-1"}
        total = before_hours + outage_hours + after_hours
        uploads = int(total * HOUR // every_seconds)
        runtime: LocalLambda
        if shape == "sqs":
            runtime = SqsFedLambda(
                world, env, handler="idem.explore.outage_entry:lambda_handler", timeout=sizing.function_timeout_seconds,
                mapping=SqsMapping(batch_size=sizing.batch_size, visibility_timeout=sizing.visibility_timeout_seconds,
                                   max_receive_count=sizing.max_receive_count,
                                   retention=float(sizing.retention_seconds)))  # the buffer queue's own
        else:
            runtime = LocalLambda(world, env, handler="idem.core.handlers.keyed:lambda_handler",
                                  timeout=sizing.function_timeout_seconds)
        objects = []
        with on_clock(world.clock):
            for n in range(uploads):  # each upload's event arrives `at` seconds after the start
                at = n * every_seconds
                order = {"order_id": f"O-{n:05d}", "amount_cents": 500, "currency": "usd"}  # docs/one_charge_per_order.md
                obj = world.upload(f"customer-{n % 7}/order-{n:05d}.json", json.dumps(order).encode())
                objects.append(obj)
                if isinstance(runtime, SqsFedLambda):
                    runtime.send_message(json.dumps(world.event(obj)), at=at)
                else:
                    runtime.send(world.event(obj), at=at)
            runtime.run()
            parked = len(world.take_messages(world.queue_url))
        assert world.provider_store is not None
        charges = world.provider_store.charge_items()
        # one object name per order here: a charge's reference names it, with or without its version
        per_order = Counter(_name(c["reference"]) for c in charges)
        counts = Counter(per_order.get(_name(o.uri), 0) for o in objects)
        # the drain: from recovery to the charge of the last order that arrived before it
        arrived = {_name(o.uri): t0 + n * every_seconds for n, o in enumerate(objects)}
        late = [float(c["created_at"]) for c in charges
                if float(c["created_at"]) >= end and arrived.get(_name(c["reference"]), end) < end]
        return OutageResult(shape, len(objects), counts.get(1, 0), sum(v for k, v in counts.items() if k > 1),
                            counts.get(0, 0), parked, len(runtime.attempts), sum(o.refused for o in outage),
                            round(max(late) - end, 3) if late else 0.0)


def _name(reference: Any) -> str:
    """s3://bucket/key, without a version."""
    return str(reference).split("?versionId=", 1)[0]
