"""A payment provider stand-in with Stripe-style idempotency keys, in its own table.

It is the ground truth for how many times money moved. The rules it keeps:
- a request with a new idempotency key (or none) creates a charge;
- the same key with the same parameters replays the first charge, moving no money;
- the same key with different parameters is an error, because it is a bug in the caller.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .clock import Clock
from .dynamo import cancelled_by_condition, from_item, to_item, values
from .errors import IdempotencyKeyReused, ProviderError


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
    def __init__(self, client: Any, table: str, clock: Clock) -> None:
        self.client = client
        self.table = table
        self.clock = clock

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None) -> Charge:
        """Move `amount` (smallest currency unit) from `customer`, once per idempotency key."""
        if amount <= 0:
            raise ProviderError(f"amount must be positive, got {amount}")
        params = {"customer": customer, "amount": amount, "currency": currency,
                  "reference": reference}
        charge = Charge(id=self._next_id(), idempotency_key=idempotency_key or "", **params)
        charge_item = {"Put": {"TableName": self.table, "Item": to_item({
            "pk": f"charge#{charge.id}", "kind": "charge", "created_at": self.clock.now(),
            "idempotency_key": idempotency_key, **params})}}
        if not idempotency_key:
            self.client.transact_write_items(TransactItems=[charge_item])
            return charge
        key_item = {"Put": {
            "TableName": self.table,
            "Item": to_item({"pk": f"key#{idempotency_key}", "kind": "key",
                             "charge_id": charge.id, "fingerprint": _fingerprint(params)}),
            "ConditionExpression": "attribute_not_exists(pk)",
        }}
        try:
            self.client.transact_write_items(TransactItems=[key_item, charge_item])
        except ClientError as error:
            if cancelled_by_condition(error, 0):
                return self._replay(idempotency_key, params)
            raise
        return charge

    def _replay(self, key: str, params: dict[str, Any]) -> Charge:
        seen = from_item(self.client.get_item(
            TableName=self.table, Key=to_item({"pk": f"key#{key}"}), ConsistentRead=True)["Item"])
        if seen["fingerprint"] != _fingerprint(params):
            raise IdempotencyKeyReused(
                f"idempotency key {key[:24]}... was first used with other parameters; "
                "a key names one request, so retries must send exactly the same one")
        first = self._get_charge(seen["charge_id"])
        return Charge(**{**first.__dict__, "replayed": True})

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


def _fingerprint(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _charge_from(item: dict[str, Any]) -> Charge:
    return Charge(id=item["pk"].removeprefix("charge#"), customer=item["customer"],
                  amount=item["amount"], currency=item["currency"], reference=item["reference"],
                  idempotency_key=item.get("idempotency_key", ""))
