"""What every handler pattern shares: the services it talks to and the charge step."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..clock import Clock
from ..events import S3Object
from ..keys import describe, idempotency_key, recipe_for
from ..ledger import Ledger
from ..provider import Charge, Provider


@dataclass
class Services:
    """The function's dependencies, built once per container from its environment."""

    ledger: Ledger
    provider: Provider
    clock: Clock
    price_cents: int = 500
    recipe: str = "version"
    currency: str = "usd"
    provider_key_retention_seconds: int = 24 * 60 * 60  # when the provider prunes a used key
    new_token: Callable[[], str] = field(default=lambda: "owner")
    # The function falls back from `version` to `content` for an unversioned upload (see
    # keys.recipe_for); chapter 03's demonstrations turn this off to show the raw recipe fail.
    fallback_unversioned: bool = True
    s3: Any = None  # the S3 client keyed reads order files with
    order_identity: str = "order-id"  # keyed's ORDER_IDENTITY (idem/core/handlers/keyed_settings.py)
    # Built by a pattern on first use and kept for the container's life (keyed's charger).
    built: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Order:
    """One upload is one order: the customer is the object's top-level folder."""

    account: str
    amount_cents: int
    key: str  # the idempotency key for charging this upload
    source: str  # what the key was made from, for humans
    reference: str  # what the provider stores: which object the money was for


#: Who pays for an upload with no customer folder: a named account the books can show and
#: the reconciliation can flag, never an empty name. (A real folder called `unassigned`
#: shares it; pick another name if your customers could be called that.)
UNASSIGNED_ACCOUNT = "unassigned"


def account_of(object_key: str) -> str:
    """Who pays for an upload: the object's top-level folder (`alice/order.csv` -> alice).

    A key with no customer folder is charged to UNASSIGNED_ACCOUNT: no `/` at all
    (`order.csv`), or an empty or blank first segment (`/order.csv`, `//x`, ` /x`).
    S3 keys may begin with `/`; the console shows `/order.csv` in a folder with no name.
    """
    folder, slash, _ = object_key.partition("/")
    return folder if slash and folder.strip() else UNASSIGNED_ACCOUNT


def order_for(obj: S3Object, svc: Services) -> Order:
    recipe = recipe_for(obj, svc.recipe) if svc.fallback_unversioned else svc.recipe
    return Order(account=account_of(obj.key), amount_cents=svc.price_cents,
                 key=idempotency_key(obj, recipe, operation="charge"),
                 source=describe(obj, recipe), reference=obj.uri)


def charge_step(svc: Services, order: Order, idempotency_key: str | None = None) -> Charge:
    """The side effect: money moves on the provider's side. The same in every handler."""
    return svc.provider.charge(customer=order.account, amount=order.amount_cents,
                               currency=svc.currency, reference=order.reference,
                               idempotency_key=idempotency_key)


def receipt(charge: Charge, status: str = "charged") -> dict[str, Any]:
    return {"status": status, "charge_id": charge.id, "amount_cents": charge.amount}
