"""Charge each order with a key made once, as remembered in this execution environment only."""
import uuid

_keys: dict[str, str] = {}


def charge_once(provider, order_id: str, reference: str) -> None:
    key = _keys.setdefault(order_id, uuid.uuid4().hex)
    provider.charge(customer="acct-1", amount=500, currency="usd", reference=reference, idempotency_key=key)
