"""Claim first: one conditional put of the key, then the work.

It stops a duplicate, but the record only says "seen". If the work then fails, every
retry finds the claim and stands down: the money may have moved (a silent mismatch) or
never moved (a silent loss), and nothing reaches the failure queue.
"""
from __future__ import annotations

from typing import Any

from ..events import S3Object
from .common import Services, charge_step, order_for, receipt


def handle(obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
    order = order_for(obj, svc)
    if not svc.ledger.claim_once(order.key, order.source).won:
        return {"status": "duplicate"}  # already claimed: skip the charge
    charge = charge_step(svc, order)
    svc.ledger.add_entry(order.account, order.amount_cents)
    return receipt(charge)
