"""A payment provider stand-in that keeps Stripe's idempotency rules (API v1), in its own table.

The rules are `Provider`'s, one implementation of them (the loopback Stripe of
idem.sim.stripe.server carries them over HTTP). What they need kept lives in a store: the
provider's DynamoDB table (`TableStore`: the demo stack's, which the reconciliation job reads), or
a dict (`MemoryStore`: a local world's for `idem check`, where the table's three calls per
charge cost more than the rest of a schedule).

It is the ground truth for how many times money moved. The rules, as Stripe documents them
on its idempotent-requests pages (https://docs.stripe.com/api/idempotent_requests and
https://docs.stripe.com/idempotency, read 2026-11):
- a request with a new idempotency key (or none) is executed;
- the status and body of the first request for a key are saved once execution begins,
  errors included: a retry with the same key gets the same answer, a saved 500 as well;
- a request whose key is still in flight gets 409 Conflict, and nothing is saved;
- the same key with different parameters is an error (a bug in the caller);
- keys may be pruned once they are at least 24 hours old; after that the same key is a new
  request, and charges again. `retention_seconds` is when this stand-in prunes (default a day;
  None never prunes, which no real provider promises);
- a decline (402, card_declined) is a final answer, saved like any other.
Other providers differ (some save only successes): a lesson names the contract it relies on.

The provider's own failures are outcomes a caller can be handed (`outcome=`): the local
runtime chooses them at the provider call's boundary (idem.sim.boundary); a handler never does.
Charges can be looked up by what they were for (`find_charges(reference)`), as real
providers offer by metadata (Stripe: search charges by `metadata['...']`).
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, Protocol

from botocore.exceptions import ClientError

from .clock import Clock
from .handlers.keyed_settings import DAY
from .dynamo import cancelled_by_condition, from_item, to_item, values
from .errors import (CardDeclined, IdempotencyKeyReused, KeyInFlight, ProviderError, ProviderFailed,
                     ProviderUnavailable)



#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
MAX_KEY_CHARS = 255


class ProviderOutcome(str, Enum):
    """What the provider does with one request, besides answering it normally."""

    OK = "ok"
    DOWN = "provider_down"  # fails before executing: nothing saved, no money moves (503)
    SAVED_500 = "provider_500"  # executes (money moves), then fails: the 500 is saved for the key
    CONFLICT = "provider_409"  # another request holds the key: 409, nothing executed or saved
    DECLINED = "declined"  # the card is declined (402): a final answer, saved for the key

    def __str__(self) -> str:
        return self.value


#: Stripe's minimum charge per currency, in the currency's smallest unit (a few of them: USD, EUR, CAD and
#: AUD $0.50, GBP 30p, JPY ¥50), refused with `amount_too_small`
#: (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts)
MINIMUM_AMOUNTS = {"usd": 50, "eur": 50, "cad": 50, "aud": 50, "gbp": 30, "jpy": 50}


@dataclass(frozen=True)
class Charge:
    id: str
    customer: str
    amount: int  # in the currency's smallest unit (cents), as Stripe counts it
    currency: str
    reference: str  # what was bought: the object the charge is for
    idempotency_key: str = ""
    replayed: bool = False  # True when the provider answered from an earlier request
    status: str = "succeeded"  # Stripe's PaymentIntent status (keyed_stripe.INTENT_MEANS reads it)


class Provider:
    """Stripe's rules for one request (`charge`), over a store that keeps what they need: the
    provider's own DynamoDB table (`TableStore`, the default) or a dict (`MemoryStore`)."""

    def __init__(self, client: Any, table: str, clock: Clock, retention_seconds: int | None = DAY,
                 *, store: "ProviderStore | None" = None) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.retention_seconds = retention_seconds  # when a used key is pruned; None: never
        self.store: ProviderStore = store if store is not None else TableStore(client, table)

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, outcome: str = "ok",
               metadata: Mapping[str, str] | None = None, payment_method: str | None = None) -> Charge:
        """Move `amount` (smallest currency unit) from `customer`, once per idempotency key."""
        outcome = ProviderOutcome(outcome)
        if outcome is ProviderOutcome.DOWN:  # before execution begins: nothing is saved
            raise ProviderUnavailable("the provider could not be reached (503); nothing was executed")
        if outcome is ProviderOutcome.CONFLICT:  # not saved either: a retry later is a new try
            raise KeyInFlight("409: another request with this idempotency key is in flight")
        if amount <= 0:  # validation fails before execution: nothing is saved
            raise ProviderError(f"amount must be positive, got {amount}")
        if amount < MINIMUM_AMOUNTS.get(currency.lower(), 1):  # refused, not saved
            raise ProviderError(f"400 amount_too_small: {amount} is under Stripe's minimum charge in {currency} "
                                f"({MINIMUM_AMOUNTS[currency.lower()]} in its smallest unit)")
        if idempotency_key is not None and len(idempotency_key) > MAX_KEY_CHARS:  # refused, not saved
            raise ProviderError(f"400: an idempotency key is at most {MAX_KEY_CHARS} characters, "
                                f"got {len(idempotency_key)}: hash a longer one")
        params: dict[str, Any] = {"customer": customer, "amount": amount, "currency": currency,
                                  "reference": reference}
        moves = outcome in (ProviderOutcome.OK, ProviderOutcome.SAVED_500)
        charge = Charge(id=self.store.next_id(), idempotency_key=idempotency_key or "", **params) if moves else None
        made = {"pk": f"charge#{charge.id}", "kind": "charge", "created_at": self.clock.now(),
                "idempotency_key": idempotency_key, **params,
                **({"metadata": dict(metadata)} if metadata else {})} if charge else None
        answer = None
        if idempotency_key:
            status = {ProviderOutcome.OK: 200, ProviderOutcome.SAVED_500: 500,
                      ProviderOutcome.DECLINED: 402}[outcome]
            answer = {"pk": f"key#{idempotency_key}", "kind": "key", "status": status,
                      "charge_id": charge.id if charge else None,
                      "created_at": self.clock.now(), "fingerprint": _fingerprint(params)}
        # The key's first answer and the charge are saved together, unless the key is saved
        # already and not yet pruned: then nothing is written, and the first answer is replayed.
        first = self.store.save(answer, made, pruned_before=self._pruned_before())
        if first is not None:
            return self._replay(idempotency_key or "", first, params)
        return _answer(outcome, charge, replayed=False)

    def _pruned_before(self) -> float:
        """Keys created at or before this moment are gone (pruned)."""
        if self.retention_seconds is None:
            return -1.0
        return self.clock.now() - self.retention_seconds

    def _replay(self, key: str, seen: dict[str, Any], params: dict[str, Any]) -> Charge:
        """The first answer saved for `key`, to a request that must be the same request."""
        if seen["fingerprint"] != _fingerprint(params):
            raise IdempotencyKeyReused(
                f"idempotency key {key[:24]}... was first used with other parameters; "
                "a key names one request, so retries must send exactly the same one")
        status = int(seen.get("status", 200))
        first = _charge_from(self.store.get_charge(seen["charge_id"])) if seen.get("charge_id") else None
        outcome = {200: ProviderOutcome.OK, 500: ProviderOutcome.SAVED_500, 402: ProviderOutcome.DECLINED}[status]
        return _answer(outcome, first, replayed=True)

    def charges(self, reference: str | None = None) -> list[Charge]:
        """Every charge the provider made, oldest first; optionally for one reference. A charge whose
        payment later failed (`fail`) moved no money and is not among them."""
        found = [_charge_from(item) for item in self.store.charge_items()
                 if reference in (None, item["reference"]) and not item.get("failed")]
        return sorted(found, key=lambda c: c.id)

    def fail(self, charge_id: str) -> None:
        """A charge's payment failed after it was answered (a bank debit `processing`, then failed:
        https://docs.stripe.com/payments/paymentintents/lifecycle): no money moved. Its key still
        replays the first answer, as Stripe's does."""
        self.store.mark_failed(charge_id)

    def find_charges(self, reference: str, idempotency_key: str | None = None) -> list[Charge]:
        """The charges made for `reference` (and, given one, with that idempotency key), however
        old their key: the lookup real providers offer by metadata (Stripe's search,
        `metadata['idempotency_key']:'...'`). A caller uses it when the key may be pruned: a late
        copy must not charge blindly."""
        return [c for c in self.charges(reference) if idempotency_key in (None, c.idempotency_key)]


# -- where the provider keeps its state -------------------------------------------------------------
class ProviderStore(Protocol):
    """What the rules need kept: charges, and each key's first answer. Items are plain dicts:
    a charge's `pk` is `charge#<id>`, a key's `key#<key>`."""

    def next_id(self) -> str:
        """A new charge id, `ch_` and a counter."""

    def save(self, answer: dict[str, Any] | None, charge: dict[str, Any] | None, *,
             pruned_before: float) -> dict[str, Any] | None:
        """Write `answer` and `charge` at once, all or nothing. When `answer`'s key is saved
        already and was created after `pruned_before`, write nothing and return the saved one."""

    def get_charge(self, charge_id: str) -> dict[str, Any]:
        """The charge item with this id."""

    def charge_items(self) -> list[dict[str, Any]]:
        """Every charge item, in no particular order."""

    def mark_failed(self, charge_id: str) -> None:
        """Mark a charge item `failed`: its payment did not go through after all."""


class TableStore:
    """The stand-in's own DynamoDB table (what the demo stack deploys, and the reconciliation
    job reads): three calls per charge, a counter, one transaction, and a read on a replay."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def next_id(self) -> str:
        counter = self.client.update_item(
            TableName=self.table, Key=to_item({"pk": "sequence"}),
            UpdateExpression="ADD n :one", ExpressionAttributeValues=values(one=1),
            ReturnValues="UPDATED_NEW")
        return f"ch_{int(counter['Attributes']['n']['N']):06d}"

    def save(self, answer: dict[str, Any] | None, charge: dict[str, Any] | None, *,
             pruned_before: float) -> dict[str, Any] | None:
        writes: list[dict[str, Any]] = []
        if answer:
            writes.append({"Put": {
                "TableName": self.table, "Item": to_item(answer),
                # a new key, or one old enough to have been pruned: this request executes
                "ConditionExpression": "attribute_not_exists(pk) OR created_at <= :pruned",
                "ExpressionAttributeValues": values(pruned=pruned_before)}})
        if charge:
            writes.append({"Put": {"TableName": self.table, "Item": to_item(charge)}})
        try:
            if writes:
                self.client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            if answer and cancelled_by_condition(error, 0):
                return self._get(answer["pk"])
            raise
        return None

    def get_charge(self, charge_id: str) -> dict[str, Any]:
        return self._get(f"charge#{charge_id}")

    def charge_items(self) -> list[dict[str, Any]]:
        found = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.table, ConsistentRead=True):
            found += [item for item in map(from_item, page["Items"]) if item.get("kind") == "charge"]
        return found

    def mark_failed(self, charge_id: str) -> None:
        self.client.update_item(TableName=self.table, Key=to_item({"pk": f"charge#{charge_id}"}),
                                UpdateExpression="SET failed = :yes", ExpressionAttributeValues=values(yes=True),
                                ConditionExpression="attribute_exists(pk)")

    def _get(self, pk: str) -> dict[str, Any]:
        item: dict[str, Any] = self.client.get_item(
            TableName=self.table, Key=to_item({"pk": pk}), ConsistentRead=True)["Item"]
        return from_item(item)


class MemoryStore:
    """The same items in a dict, for a local world: no call per charge. It belongs to the
    world, not to a function's container, so it outlives the handler's simulated crashes.
    One lock makes `save` all or nothing, as the table's transaction is."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        self._made = 0
        self._lock = threading.Lock()

    def next_id(self) -> str:
        with self._lock:
            self._made += 1
            return f"ch_{self._made:06d}"

    def save(self, answer: dict[str, Any] | None, charge: dict[str, Any] | None, *,
             pruned_before: float) -> dict[str, Any] | None:
        with self._lock:
            seen = self.items.get(answer["pk"]) if answer else None
            if seen is not None and seen["created_at"] > pruned_before:
                return dict(seen)
            for item in (answer, charge):
                if item:  # None values are left out, as to_item leaves them out of the table
                    self.items[item["pk"]] = {k: v for k, v in item.items() if v is not None}
        return None

    def get_charge(self, charge_id: str) -> dict[str, Any]:
        with self._lock:
            return dict(self.items[f"charge#{charge_id}"])

    def charge_items(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(item) for item in self.items.values() if item["kind"] == "charge"]

    def mark_failed(self, charge_id: str) -> None:
        with self._lock:
            self.items[f"charge#{charge_id}"]["failed"] = True


def _answer(outcome: ProviderOutcome, charge: Charge | None, replayed: bool) -> Charge:
    """The answer to a request, first or replayed: a charge, or the saved error."""
    if outcome is ProviderOutcome.SAVED_500:
        raise ProviderFailed("500: the provider failed while executing; a retry with this key "
                             "replays this answer" + (" (replayed)" if replayed else ""), replayed=replayed)
    if outcome is ProviderOutcome.DECLINED:
        raise CardDeclined("402: card_declined" + (" (replayed)" if replayed else ""), replayed=replayed)
    assert charge is not None
    return Charge(**{**charge.__dict__, "replayed": replayed})


def _fingerprint(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _charge_from(item: dict[str, Any]) -> Charge:
    return Charge(id=item["pk"].removeprefix("charge#"), customer=item["customer"],
                  amount=item["amount"], currency=item["currency"], reference=item["reference"],
                  idempotency_key=item.get("idempotency_key", ""))
