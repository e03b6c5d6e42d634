"""A payment provider stand-in that keeps Stripe's idempotency rules (API v1), in its own table.

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
from dataclasses import dataclass
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError

from .clock import Clock
from .handlers.keyed import DAY
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


@dataclass(frozen=True)
class Charge:
    id: str
    customer: str
    amount: int  # in the currency's smallest unit (cents), as Stripe counts it
    currency: str
    reference: str  # what was bought: the object the charge is for
    idempotency_key: str = ""
    replayed: bool = False  # True when the provider answered from an earlier request


class Provider:
    def __init__(self, client: Any, table: str, clock: Clock, retention_seconds: int | None = DAY) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.retention_seconds = retention_seconds  # when a used key is pruned; None: never

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, outcome: str = "ok") -> Charge:
        """Move `amount` (smallest currency unit) from `customer`, once per idempotency key."""
        outcome = ProviderOutcome(outcome)
        if outcome is ProviderOutcome.DOWN:  # before execution begins: nothing is saved
            raise ProviderUnavailable("the provider could not be reached (503); nothing was executed")
        if outcome is ProviderOutcome.CONFLICT:  # not saved either: a retry later is a new try
            raise KeyInFlight("409: another request with this idempotency key is in flight")
        if amount <= 0:  # validation fails before execution: nothing is saved
            raise ProviderError(f"amount must be positive, got {amount}")
        if idempotency_key is not None and len(idempotency_key) > MAX_KEY_CHARS:  # refused, not saved
            raise ProviderError(f"400: an idempotency key is at most {MAX_KEY_CHARS} characters, "
                                f"got {len(idempotency_key)}: hash a longer one")
        params: dict[str, Any] = {"customer": customer, "amount": amount, "currency": currency,
                                  "reference": reference}
        moves = outcome in (ProviderOutcome.OK, ProviderOutcome.SAVED_500)
        charge = Charge(id=self._next_id(), idempotency_key=idempotency_key or "", **params) if moves else None
        writes = []
        if charge:
            writes.append({"Put": {"TableName": self.table, "Item": to_item({
                "pk": f"charge#{charge.id}", "kind": "charge", "created_at": self.clock.now(),
                "idempotency_key": idempotency_key, **params})}})
        if idempotency_key:
            status = {ProviderOutcome.OK: 200, ProviderOutcome.SAVED_500: 500,
                      ProviderOutcome.DECLINED: 402}[outcome]
            writes.insert(0, {"Put": {
                "TableName": self.table,
                "Item": to_item({"pk": f"key#{idempotency_key}", "kind": "key", "status": status,
                                 "charge_id": charge.id if charge else None,
                                 "created_at": self.clock.now(), "fingerprint": _fingerprint(params)}),
                # a new key, or one old enough to have been pruned: this request executes
                "ConditionExpression": "attribute_not_exists(pk) OR created_at <= :pruned",
                "ExpressionAttributeValues": values(pruned=self._pruned_before()),
            }})
        try:
            if writes:
                self.client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            if idempotency_key and cancelled_by_condition(error, 0):
                return self._replay(idempotency_key, params)
            raise
        return _answer(outcome, charge, replayed=False)

    def _pruned_before(self) -> float:
        """Keys created at or before this moment are gone (pruned)."""
        if self.retention_seconds is None:
            return -1.0
        return self.clock.now() - self.retention_seconds

    def _replay(self, key: str, params: dict[str, Any]) -> Charge:
        seen = from_item(self.client.get_item(
            TableName=self.table, Key=to_item({"pk": f"key#{key}"}), ConsistentRead=True)["Item"])
        if seen["fingerprint"] != _fingerprint(params):
            raise IdempotencyKeyReused(
                f"idempotency key {key[:24]}... was first used with other parameters; "
                "a key names one request, so retries must send exactly the same one")
        status = int(seen.get("status", 200))
        first = self._get_charge(seen["charge_id"]) if seen.get("charge_id") else None
        outcome = {200: ProviderOutcome.OK, 500: ProviderOutcome.SAVED_500, 402: ProviderOutcome.DECLINED}[status]
        return _answer(outcome, first, replayed=True)

    def _get_charge(self, charge_id: str) -> Charge:
        item = from_item(self.client.get_item(
            TableName=self.table, Key=to_item({"pk": f"charge#{charge_id}"}), ConsistentRead=True)["Item"])
        return _charge_from(item)

    def _next_id(self) -> str:
        counter = self.client.update_item(
            TableName=self.table, Key=to_item({"pk": "sequence"}),
            UpdateExpression="ADD n :one", ExpressionAttributeValues=values(one=1),
            ReturnValues="UPDATED_NEW")
        return f"ch_{int(counter['Attributes']['n']['N']):06d}"

    def charges(self, reference: str | None = None) -> list[Charge]:
        """Every charge the provider made, oldest first; optionally for one reference."""
        found = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.table, ConsistentRead=True):
            for item in map(from_item, page["Items"]):
                if item.get("kind") == "charge" and reference in (None, item["reference"]):
                    found.append(_charge_from(item))
        return sorted(found, key=lambda c: c.id)

    def find_charges(self, reference: str, idempotency_key: str | None = None) -> list[Charge]:
        """The charges made for `reference` (and, given one, with that idempotency key), however
        old their key: the lookup real providers offer by metadata (Stripe's search,
        `metadata['idempotency_key']:'...'`). A caller uses it when the key may be pruned: a late
        copy must not charge blindly."""
        return [c for c in self.charges(reference) if idempotency_key in (None, c.idempotency_key)]


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
