"""The handler patterns, by name, as HANDLER_MODE picks them: `handle(obj, services, context) -> result`."""
from __future__ import annotations

from typing import Any, Callable

from .events import S3Object
from .handlers import claim_first, keyed, keyed_orders, keyed_settings, naive, robust
from .handlers.common import Services

Handler = Callable[[S3Object, Services, Any], dict[str, Any]]


def keyed_handle(obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
    """The keyed handler (a file of its own, to copy) on the entry point's services; its
    charger is built once per container, as the file's own lambda_handler builds it."""
    charger = svc.built.get("keyed")
    if charger is None:
        charger = svc.built["keyed"] = keyed.KeyedCharger(
            svc.ledger.client, svc.provider,
            keyed_settings.Settings(
                svc.ledger.table, currencies=(svc.currency,),
                provider_key_retention_seconds=svc.provider_key_retention_seconds, order_identity=svc.order_identity,
                # no order file read (object-name, upload): the entry point's PRICE_CENTS is the price per upload
                price_per_upload_cents=None if svc.order_identity == "order-id" else svc.price_cents),
            now=svc.clock.now, new_owner=svc.new_token, s3=svc.s3)
    return charger.charge_once(keyed_orders.Upload.of(obj), context.get_remaining_time_in_millis())


HANDLERS: dict[str, Handler] = {
    "naive": naive.handle,
    "claim_first": claim_first.handle,
    "robust": robust.handle,
    "keyed": keyed_handle,
}
#: Patterns whose record has a `done` state: completed also requires it.
HAS_DONE_STATE = {"robust", "keyed"}


def get_handler(mode: str) -> Handler:
    try:
        return HANDLERS[mode]
    except KeyError:
        raise ValueError(f"unknown HANDLER_MODE {mode!r}; choose one of {', '.join(HANDLERS)}") from None
