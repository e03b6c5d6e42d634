"""Runs that chapters 05-07 need and the scenario matrix does not cover.

- `copy_at`: a concurrent copy of the event, arriving when the first invocation reaches a step.
- `zombie`: the first invocation stalls right after its charge, its lease runs out, and a
  copy of the event takes the work over.
- `lease_windows`: when each keyed invocation held the lease (from its claim to its deadline).
- `late_duplicate`: a copy of the event delivered hours later, against a record that lives
  `ttl_seconds` (the function's RECORD_TTL_SECONDS).
- `ttl_sweep`: what DynamoDB's TTL process does to expired items, eventually (moto never does).

Everything runs in a fresh LocalWorld on the virtual clock, like `scenarios.run`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.dynamo import to_item
from ..core.patterns import HANDLERS, HAS_DONE_STATE
from . import scenarios as sc
from .boundary import FaultPlan
from .runtime import DEFAULT_MAX_EVENT_AGE, Attempt, LocalLambda
from .world import LocalWorld

#: The checkpoints every handler passes through, in order: where a concurrent copy can land.
STEPS = ("before_charge", "charged", "recorded")


def _check_handler(handler: str) -> None:
    if handler not in HANDLERS:
        raise ValueError(f"unknown handler {handler!r}; choose from {', '.join(HANDLERS)}")


def copy_at(handler: str = "robust", step: str = "before_charge") -> sc.Outcome:
    """One upload; a second copy of its event runs when the first invocation reaches `step`."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; choose from {', '.join(STEPS)}")
    return sc.run(sc.Scenario(handler, delivery="concurrent", concurrent_at=step))


def zombie(handler: str = "keyed", pause: float = 45.0, timeout: float = 30.0) -> sc.Outcome:
    """The first invocation charges, then stalls for `pause` seconds; a copy of the event
    arrives at the end of the stall, and only then does the first one try to commit.

    A stall longer than the lease (which ends at the invocation's deadline, `timeout`
    seconds after it started) lets the copy take the work over: the stalled invocation
    is a zombie, and its commit must be refused.
    """
    _check_handler(handler)
    if pause < 0:
        raise ValueError(f"the stall is a number of seconds, 0 or more; got {pause}")
    scenario = sc.Scenario(handler, delivery="concurrent", timeout=timeout, concurrent_at="charged")
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env(handler), timeout=timeout)
        event = world.event(world.upload(sc.ORDER_KEY))
        runtime.send(event)

        def stall_then_copy() -> None:
            world.clock.advance(pause)
            runtime.send_now(event)

        runtime.during("charged", stall_then_copy)
        runtime.run()
        return sc.read_outcome(world, runtime, scenario, handler in HAS_DONE_STATE)


def lease_windows(outcome: sc.Outcome) -> list[tuple[int, float, float]]:
    """(delivery, start, end) of each lease a keyed run took, on the virtual clock.

    An invocation that won the claim reaches the `before_charge` step; its lease runs
    to its deadline, `timeout` seconds after it started.
    """
    if outcome.scenario.handler != "keyed":
        return []  # only the keyed scribe's claim carries a lease
    timeout = outcome.scenario.timeout
    return [(a.delivery, a.start, a.start + timeout) for a in outcome.trace
            if any(step == "before_charge" for _, step in a.steps)]


def last_status(outcome: sc.Outcome, delivery: int = 1, attempt: int = 1) -> str:
    """What one invocation's handler returned for the upload (charged, duplicate, superseded)
    or, if it raised, the error's name."""
    for a in outcome.trace:
        if (a.delivery, a.attempt) == (delivery, attempt):
            processed = (a.result or {}).get("processed") or [{}]
            return processed[0].get("status") or a.error.split(":", 1)[0] or "-"
    raise ValueError(f"no invocation for delivery {delivery}, attempt {attempt} in this run")


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
    expires_at: float  # when the first record expired, seconds on the virtual clock
    late_status: str  # what the handler returned to the late copy
    outcome: sc.Outcome

    @property
    def expired(self) -> bool:
        return self.expires_at <= self.delay

    def row(self) -> dict[str, Any]:
        o = self.outcome
        return {"handler": self.handler, "record TTL (s)": self.ttl_seconds,
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
    _check_handler(handler)
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
        expires_at = records[0].expires_at - world.clock.start if records else 0.0
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


def redrive(world: LocalWorld, runtime: LocalLambda) -> int:
    """Hand every event in the failure queue back to the function, as an operator does once
    the cause is fixed: the invocation record's `requestPayload` is sent again, and the
    message is deleted once it has been queued. Returns how many events were redriven."""
    sent = 0
    while True:
        messages = world.sqs.receive_message(QueueUrl=world.queue_url, MaxNumberOfMessages=10,
                                             VisibilityTimeout=30).get("Messages", [])
        if not messages:
            break
        for message in messages:
            runtime.send(json.loads(message["Body"])["requestPayload"])
            world.sqs.delete_message(QueueUrl=world.queue_url, ReceiptHandle=message["ReceiptHandle"])
            sent += 1
    runtime.run()
    return sent


@dataclass(frozen=True)
class BatchUpload:
    """One upload of a staged batch, and how the function treats it."""

    key: str
    handler: str  # "" when the event never reaches the function
    fault: FaultPlan = FaultPlan()
    timeout: float = 30.0
    story: str = ""


#: A messy batch: each upload meets the handler and fault that leave one kind of trouble.
MESSY_BATCH = (
    BatchUpload("alice/order-0101.csv", "keyed", story="an ordinary upload"),
    BatchUpload("bob/order-0102.csv", "robust", FaultPlan.at_point("after_charge", "once"),
                story="robust dies after the charge, and its retry charges again"),
    BatchUpload("carol/order-0103.csv", "claim_first", FaultPlan.at_point("at_charge", "once"),
                story="claim-first's charge fails, and its retry is deduplicated away"),
    BatchUpload("dave/order-0104.csv", "keyed", FaultPlan.at_point("after_charge", "once", how="crash"),
                timeout=900.0, story="keyed crashes after the charge under a 900 s timeout"),
    BatchUpload("erin/order-0105.csv", "", story="the event never reaches the function"),
)


def run_batch(world: LocalWorld, uploads: tuple[BatchUpload, ...] = MESSY_BATCH) -> list[Attempt]:
    """Upload each object into `world` and let its function run until nothing is left to retry.
    Returns every invocation, in order."""
    attempts: list[Attempt] = []
    for upload in uploads:
        obj = world.upload(upload.key, upload.story.encode() or b"order")
        if not upload.handler:
            continue
        _check_handler(upload.handler)
        runtime = LocalLambda(world, world.env(upload.handler), fault=upload.fault,
                              timeout=upload.timeout)
        runtime.send(world.event(obj))
        attempts.extend(runtime.run())
    return attempts


def footprints(world: LocalWorld, attempts: list[Attempt]) -> dict[str, int]:
    """The counts that give a duplicate away when they disagree: what arrived, what the
    function did, what the books and the provider say, and what is left in the queue."""
    ledger = world.ledger()
    objects = sum(len(page.get("Versions", [])) for page in
                  world.s3.get_paginator("list_object_versions").paginate(Bucket=world.bucket))
    entries = sum(item.get("charges", 0) for item in ledger.items()
                  if item["pk"].startswith("account#"))
    return {
        "objects uploaded": objects,
        "invocations": len(attempts),
        "retries": sum(1 for a in attempts if a.attempt > 1),
        "records done": sum(1 for r in ledger.records() if str(r.status) == "done"),
        "provider charges": len(world.provider().charges()),
        "ledger entries": entries,
        "failure queue depth": world.failure_queue_depth(),
    }
