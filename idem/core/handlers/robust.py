"""The robust scribe, as the article writes it: in_progress, the work, then done.

A retry that finds `in_progress` tries the work again; one that finds `done` stands down;
a charge that keeps failing ends in the failure queue instead of vanishing. Its two holes:
the record is read before it is written (a concurrent duplicate that reads `in_progress`
charges too), and a death between the charge and `done` charges again on the retry.
"""
from __future__ import annotations

from typing import Any

from ..events import S3Object
from .keyed import Status
from .common import Services, charge_step, order_for, receipt


def handle(obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
    order = order_for(obj, svc)
    record = svc.ledger.get_record(order.key)
    if record and record.status is Status.DONE:
        return {"status": "duplicate"}  # finished before: stand down
    if record is None and not svc.ledger.put_in_progress(order.key, order.source).won:
        return {"status": "duplicate"}  # a concurrent duplicate won the put
    charge = charge_step(svc, order)  # if this fails, the record stays in_progress
    svc.ledger.add_entry(order.account, order.amount_cents)
    svc.ledger.mark_done(order.key, receipt(charge))  # done, only after the charge succeeded
    return receipt(charge)
