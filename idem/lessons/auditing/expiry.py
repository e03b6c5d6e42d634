"""Records that expire: a copy of the event delivered hours later against a record that lives
`ttl_seconds`, and what DynamoDB's TTL sweeper does, eventually (moto never does) (chapter 07).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.dynamo import to_item
from ...core.patterns import HAS_DONE_STATE
from ...explore import scenarios as sc
from ..scribes.leases import known_handler, last_status
from ...sim.runtime import DEFAULT_MAX_EVENT_AGE, LocalLambda
from ...sim.world import LocalWorld


def _late_status(outcome: sc.Outcome) -> str:
    """What the late copy (delivery 2) did, and whether the provider answered from memory."""
    status = last_status(outcome, delivery=2)
    replayed = any(step == "replayed" for a in outcome.trace if a.delivery == 2 for _, step in a.steps)
    return f"{status} (provider replayed)" if replayed else status


@dataclass
class LateRun:
    """A copy of the event that arrived `delay` seconds after the first, and what it did."""

    handler: str
    ttl_seconds: int
    delay: float
    swept: bool  # had DynamoDB's TTL process deleted the expired record before the copy came?
    expires_at: float  # when the first record expires, seconds on the virtual clock (inf: never)
    late_status: str  # what the handler returned to the late copy
    outcome: sc.Outcome

    @property
    def expired(self) -> bool:
        return self.expires_at <= self.delay

    def row(self) -> dict[str, Any]:
        o = self.outcome
        return {"handler": self.handler, "record TTL (s)": self.ttl_seconds if self.expires_at != float("inf") else "never (done)",
                "copy after (s)": self.delay, "record expired": self.expired,
                "TTL sweep ran": self.swept, "late copy": self.late_status,
                "charges": o.charges, "ledger": o.ledger, "verdict": o.verdict}


def late_duplicate(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200.0,
                   swept: bool = False) -> LateRun:
    """Deliver an upload's event, then the same event again `delay` seconds later, to a
    function whose records live `ttl_seconds` (RECORD_TTL_SECONDS).

    `swept` runs DynamoDB's TTL deletion just before the late copy arrives; AWS does that
    at a time of its own choosing (often days after expiry), and moto never does.
    """
    known_handler(handler)
    if ttl_seconds < 1:
        raise ValueError(f"RECORD_TTL_SECONDS must be at least 1; got {ttl_seconds}")
    if not 0 < delay <= DEFAULT_MAX_EVENT_AGE:
        raise ValueError(f"a copy arrives within MaximumEventAgeInSeconds "
                         f"({DEFAULT_MAX_EVENT_AGE} s) of the event; got a delay of {delay} s")
    scenario = sc.Scenario(handler, delivery="duplicate")
    with LocalWorld() as world:
        env = world.env(handler, RECORD_TTL_SECONDS=str(ttl_seconds))
        runtime = LocalLambda(world, env)
        event = world.event(world.upload(sc.ORDER_KEY))
        runtime.send(event)
        runtime.run()
        records = world.ledger().records()
        # keyed's done record is its ledger line and has no expiry: it never expires
        expires_at = (records[0].expires_at - world.clock.start if records[0].expires_at
                      else float("inf")) if records else 0.0
        world.clock.advance_to(world.clock.start + delay)
        if swept:
            ttl_sweep(world)
        runtime.send(event)
        runtime.run()
        outcome = sc.read_outcome(world, runtime, scenario, handler in HAS_DONE_STATE)
    return LateRun(handler, ttl_seconds, delay, swept, expires_at,
                   _late_status(outcome), outcome)


def ttl_sweep(world: LocalWorld) -> list[str]:
    """Delete the ledger items whose TTL attribute (`expires_at`) has passed, as DynamoDB's
    TTL process eventually does. Returns the deleted keys."""
    now = world.clock.now()
    gone = [item["pk"] for item in world.ledger().items()
            if item.get("expires_at") and item["expires_at"] <= now]
    for pk in gone:
        world.dynamodb.delete_item(TableName=world.ledger_table, Key=to_item({"pk": pk}))
    return gone
