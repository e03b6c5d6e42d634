"""What every handler pattern shares: the services it talks to and the charge step."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..clock import Clock
from ..events import S3Object
from ...local.faults import FaultInjector
from ..keys import describe, idempotency_key
from ..ledger import Ledger
from ..provider import Charge, Provider


def no_checkpoint(step: str) -> None:
    """On AWS a step boundary is just a point in the code."""


@dataclass
class Services:
    """The function's dependencies, built once per container from its environment."""

    ledger: Ledger
    provider: Provider
    faults: FaultInjector
    clock: Clock
    price_cents: int = 500
    recipe: str = "version"
    new_token: Callable[[], str] = field(default=lambda: "owner")
    # The local runtime listens here to record steps and to start a concurrent duplicate.
    checkpoint: Callable[[str], None] = no_checkpoint


@dataclass(frozen=True)
class Order:
    """One upload is one order: the customer is the object's top-level folder."""

    account: str
    amount_cents: int
    key: str  # the idempotency key for charging this upload
    source: str  # what the key was made from, for humans
    reference: str  # what the provider stores: which object the money was for


def account_of(object_key: str) -> str:
    """Who pays for an upload: the object's top-level folder (`alice/order.csv` -> alice)."""
    return object_key.split("/", 1)[0] if "/" in object_key else "anonymous"


def order_for(obj: S3Object, svc: Services) -> Order:
    return Order(account=account_of(obj.key), amount_cents=svc.price_cents,
                 key=idempotency_key(obj, svc.recipe, operation="charge"),
                 source=describe(obj, svc.recipe), reference=obj.uri)


def charge_step(svc: Services, order: Order, idempotency_key: str | None = None) -> Charge:
    """The side effect: money moves on the provider's side. The same in every handler."""
    svc.checkpoint("before_charge")
    svc.faults.at("at_charge", order.key)  # the provider call fails: no money moves
    charge = svc.provider.charge(order.account, order.amount_cents, order.reference,
                                 idempotency_key=idempotency_key)
    svc.checkpoint("replayed" if charge.replayed else "charged")
    svc.faults.at("after_charge", order.key)  # money moved; our books do not know yet
    return charge


def receipt(charge: Charge, status: str = "charged") -> dict[str, Any]:
    return {"status": status, "charge_id": charge.id, "amount_cents": charge.amount_cents}
