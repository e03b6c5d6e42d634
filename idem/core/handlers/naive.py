"""The naive scribe: charge, write it down, no guard. A retry charges again."""
from __future__ import annotations

from typing import Any

from ..events import S3Object
from .common import Services, charge_step, order_for, receipt


def handle(obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
    order = order_for(obj, svc)
    charge = charge_step(svc, order)
    svc.ledger.add_entry(order.account, order.amount_cents)
    return receipt(charge)
