"""What Stripe does to keys over time, for the loopback Stripe (idem.sim.stripe.account): it prunes
idempotency keys once they are old enough, and an API key rolled in the Dashboard expires.

- `prune_idempotency_keys(account, older_than_seconds)`: "You can remove keys from the system
  automatically after they're at least 24 hours old. We generate a new request if a key is reused
  after the original is pruned." (https://docs.stripe.com/api/idempotent_requests). Stripe *may*
  prune a key from 24 h on, and says nothing of when it does: a test that wants keys kept longer
  builds the stand-in with `retention_seconds=None` (never on its own) and prunes when it chooses.
  Both layers forget the key: the loopback's saved answers and the stand-in's (idem.core.provider),
  so the next request with it executes anew, and charges again.
- `expire_api_key(account, api_key)`: "If a request includes a deleted or expired key, Stripe
  returns an authentication error" (https://docs.stripe.com/keys): a 401 with code
  api_key_expired (https://docs.stripe.com/error-codes). "Rolling a key revokes it and generates a
  replacement key. You can roll a key immediately or schedule a key to roll after a certain time"
  (https://support.stripe.com/questions/how-do-i-roll-change-update-my-stripe-api-key): a test
  expires the old key when it chooses.
"""
from __future__ import annotations

from typing import Any

from ...core.dynamo import from_item, to_item
from ...core.provider import MemoryStore, TableStore
from .account import StripeAccount

__all__ = ["DAY", "expire_api_key", "prune_idempotency_keys"]

#: Stripe's floor: a key is never pruned before it is 24 hours old.
DAY = 24 * 60 * 60


def prune_idempotency_keys(account: StripeAccount, older_than_seconds: float = DAY) -> int:
    """Forget every idempotency key first used at least `older_than_seconds` ago (never under 24 h:
    Stripe keeps a key that long), in the loopback's saved answers and the stand-in's store.
    Returns how many keys the loopback forgot."""
    if older_than_seconds < DAY:
        raise ValueError(f"Stripe keeps a key at least 24 h; asked to prune keys {older_than_seconds} s old")
    cutoff = account.now() - older_than_seconds
    with account._lock:
        old = [slot for slot, saved in account._saved.items() if saved.created <= cutoff]
        for slot in old:
            del account._saved[slot]
    _forget_in_store(account.provider.store, cutoff)
    return len(old)


def expire_api_key(account: StripeAccount, api_key: str) -> None:
    """From now on every request with `api_key` is answered 401 api_key_expired."""
    account.expired_keys.add(api_key)


def _forget_in_store(store: Any, cutoff: float) -> None:
    """The stand-in's saved answers (`key#...` items) first saved at or before `cutoff`."""
    if isinstance(store, MemoryStore):
        with store._lock:
            for pk in [pk for pk, item in store.items.items()
                       if item.get("kind") == "key" and item["created_at"] <= cutoff]:
                del store.items[pk]
    elif isinstance(store, TableStore):
        pages = store.client.get_paginator("scan").paginate(TableName=store.table, ConsistentRead=True)
        for item in (from_item(i) for page in pages for i in page["Items"]):
            if item.get("kind") == "key" and item["created_at"] <= cutoff:
                store.client.delete_item(TableName=store.table, Key=to_item({"pk": item["pk"]}))
    else:  # pragma: no cover - a store of another kind cannot be pruned from here
        raise TypeError(f"cannot prune keys in a {type(store).__name__}")
