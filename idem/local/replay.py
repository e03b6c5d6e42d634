"""Replay a captured S3 event through the local runtime, on fresh moto resources."""
from __future__ import annotations

from typing import Any

from ..core.events import read_event
from ..core.handlers import HANDLERS
from ..core.keys import idempotency_key
from .runtime import LocalLambda
from .world import LocalWorld


def replay(event: dict[str, Any], handler: str = "keyed", deliveries: int = 1) -> list[dict[str, Any]]:
    """Deliver `event` `deliveries` times, one after the other; one result row per record.

    The function never reads the objects, so the bucket named in the event need not
    exist here: only the ledger, provider and failure queue are created fresh.
    """
    if handler not in HANDLERS:
        raise ValueError(f"unknown handler {handler!r}; choose from {', '.join(HANDLERS)}")
    with LocalWorld(prefix="replay") as world:
        runtime = LocalLambda(world, world.env(handler))
        for n in range(deliveries):
            runtime.send(event, at=n * 5.0)
        runtime.run()
        ledger, provider = world.ledger(), world.provider()
        rows = []
        for obj in read_event(event).objects:
            record = ledger.get_record(idempotency_key(obj))
            rows.append({"object": obj.uri, "handler": handler, "deliveries": deliveries,
                         "charges": len(provider.charges(reference=obj.uri)),
                         "record": str(record.status) if record else "-"})
        failed = sum(1 for a in runtime.attempts if a.failed)
        for row in rows:
            row.update(attempts=len(runtime.attempts), failed_attempts=failed,
                       dlq=world.failure_queue_depth())
        return rows
