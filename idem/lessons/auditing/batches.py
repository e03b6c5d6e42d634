"""A messy batch of uploads through several patterns, and what it leaves behind (footprints),
for chapter 07's reconciliation. Redriving the failure queue is `idem.explore.redrive`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ...core.ledger import booked
from ...sim.faults import FaultPlan
from ...sim.runtime import Attempt, LocalLambda
from ...sim.world import LocalWorld
from ..scribes.leases import known_handler


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


def order_file(upload: BatchUpload) -> bytes:
    """The order file uploaded: the keyed handler charges per order, named by its `order_id`
    (docs/one_charge_per_order.md); `alice/order-0101.csv` is order `alice-order-0101`, of
    the workbook's 500 cents (an order file holds only the fields the handler knows)."""
    return json.dumps({"order_id": upload.key.rsplit(".", 1)[0].replace("/", "-"), "amount_cents": 500}).encode()


def run_batch(world: LocalWorld, uploads: tuple[BatchUpload, ...] = MESSY_BATCH) -> list[Attempt]:
    """Upload each object into `world` and let its function run until nothing is left to retry.
    Returns every invocation, in order."""
    attempts: list[Attempt] = []
    for upload in uploads:
        obj = world.upload(upload.key, order_file(upload))
        if not upload.handler:
            continue
        known_handler(upload.handler)
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
    entries = sum(charges for charges, _ in booked(ledger.items()).values())
    return {
        "objects uploaded": objects,
        "invocations": len(attempts),
        "retries": sum(1 for a in attempts if a.attempt > 1),
        "records done": sum(1 for r in ledger.records() if str(r.status) == "done"),
        "provider charges": len(world.provider().charges()),
        "ledger entries": entries,
        "failure queue depth": world.failure_queue_depth(),
    }
