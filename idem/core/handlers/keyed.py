"""The keyed scribe: the complete pattern.

1. One conditional put claims the key, with a lease that ends at this invocation's
   deadline. If the put fails, DynamoDB returns the record in the same call: `done`
   means a duplicate (replay the stored result), a live lease means another invocation
   is at work (raise, so Lambda retries later), anything else was taken over by the put.
2. The provider is called with the same key, so a retry after a charge that landed
   replays it instead of charging again: the only way to close the window between
   the charge and the commit.
3. The commit writes `done` and books the charge in one transaction, only if this
   invocation still owns the record, and books each charge id only once.
"""
from __future__ import annotations

from typing import Any

from ..clock import iso8601
from ..events import S3Object
from ..errors import LostOwnership, WorkInProgress
from ..ledger import Status
from .common import Services, charge_step, order_for, receipt


def handle(obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
    order = order_for(obj, svc)
    now = svc.clock.now()
    deadline = now + context.get_remaining_time_in_millis() / 1000
    owner = svc.new_token()
    claim = svc.ledger.claim(order.key, owner, lease_until=deadline, source=order.source)
    if not claim.won:
        existing = claim.existing
        if existing.status is Status.DONE:
            return {**(existing.result or {}), "status": "duplicate"}
        raise WorkInProgress(
            f"{order.source} is being worked on until {iso8601(existing.lease_until)}; retry later")
    charge = charge_step(svc, order, idempotency_key=order.key)
    try:
        svc.ledger.commit(order.key, owner, receipt(charge), order.account, order.amount_cents,
                          charge.id)
    except LostOwnership:
        # Our lease ran out mid-flight and another invocation took the work over.
        # The provider key made our charge and theirs the same charge; theirs commits.
        return {**receipt(charge), "status": "superseded"}
    return receipt(charge)
