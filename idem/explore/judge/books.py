"""The books: where they are (`--books TABLE_ENV:ATTRIBUTE`, `Books`), and their lines judged per
charge, not by counting the items that carry a charge id.

A ledger line is an item of the books' table that carries the charge's id (`--books
TABLE_ENV:ATTRIBUTE`). A handler often keeps the charge id elsewhere in the same table as well: its
done record keeps its result (the charge it made), as Powertools' idempotency records keep the
function's response. Both carry the id of ONE charge; counting them gives "2 ledger lines for 1
charge" on a correct handler's clean run. So items are grouped by the charge they name, and within a
charge by their shape (the names of their attributes): a record and a line are two shapes, one line
each; two items of one shape (a second line for the same charge, under another key) are two lines.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from ...sim.world import pk_text
from ..errors import CheckInputError


def lines(items: Iterable[dict[str, Any]], attribute: str) -> list[str]:
    """The key (`pk`) of each ledger line among `items`, each of which carries `attribute`: per
    charge, the items of its most numerous shape (ties: the shape named first in sorted order)."""
    by_charge: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for item in items:
        charge = json.dumps(item[attribute], sort_keys=True, default=str)
        shape = tuple(sorted(item))
        by_charge.setdefault(charge, {}).setdefault(shape, []).append(pk_text(item["pk"]))
    return [pk for shapes in by_charge.values()
            for pk in sorted(shapes.items(), key=lambda s: (-len(s[1]), s[0]))[0][1]]


@dataclass(frozen=True)
class Books:
    """Where the handler's books are: items of the table named by the environment variable
    `table_env` that carry `attribute` are ledger lines (one per charge booked)."""

    table_env: str = "LEDGER_TABLE"
    attribute: str = "charge_id"
    named: bool = False  # named by the caller: then the clean run must book there

    @classmethod
    def parse(cls, text: str | None) -> "Books | None":
        """`None`: the default place, judged if the clean run books there; `none`: not judged;
        TABLE_ENV:ATTRIBUTE: judged, and the clean run must book there."""
        if text is None:
            return cls()
        if text in ("", "none"):
            return None
        table_env, sep, attribute = text.partition(":")
        if not sep or not table_env or not attribute:
            raise CheckInputError(f"--books {text!r} is not TABLE_ENV:ATTRIBUTE (for example "
                                  "LEDGER_TABLE:charge_id), or none")
        return cls(table_env, attribute, named=True)

    def __str__(self) -> str:
        return f"{self.table_env}:{self.attribute}"


def refused_lines(invalid: Iterable[tuple[str, dict[str, Any], str]], table: str, attribute: str) -> list[str]:
    """The ledger lines the handler sent to the books' table that DynamoDB refused as invalid (a
    ValidationException: no retry makes them land; `idem.sim.boundary.Watch.invalid`), each as its call
    and DynamoDB's message: an item carrying `attribute` put (PutItem, a transaction's Put, a batch's
    PutRequest), or an update naming it."""
    found = []
    for call, params, message in invalid:
        if any(name == table and attribute in attributes for name, attributes in _written(call, params)):
            found.append(f"{call}: {message}")
    return found


def _written(call: str, params: dict[str, Any]) -> Iterable[tuple[Any, Any]]:
    """(table, the attribute names it writes) for each write of a DynamoDB request's parameters."""
    def one(request: Any) -> Iterable[tuple[Any, Any]]:
        if not isinstance(request, dict):
            return []
        if isinstance(request.get("Item"), dict):
            return [(request.get("TableName"), set(request["Item"]))]
        if isinstance(request.get("AttributeUpdates"), dict):  # UpdateItem's legacy parameter
            return [(request.get("TableName"), set(request["AttributeUpdates"]))]
        if isinstance(request.get("UpdateExpression"), str):
            names = request.get("ExpressionAttributeNames") or {}
            words = set(request["UpdateExpression"].replace(",", " ").replace("=", " ").split())
            return [(request.get("TableName"), words | set(names.values() if isinstance(names, dict) else []))]
        return []

    if call in ("dynamodb:PutItem", "dynamodb:UpdateItem"):
        return list(one(params))
    if call == "dynamodb:TransactWriteItems":
        return [w for entry in params.get("TransactItems") or [] if isinstance(entry, dict)
                for action in entry.values() for w in one(action)]
    if call == "dynamodb:BatchWriteItem":
        tables = params.get("RequestItems") or {}
        return [(name, set(request["PutRequest"].get("Item") or {})) for name, requests in tables.items()
                for request in requests or [] if isinstance(request, dict) and isinstance(request.get("PutRequest"), dict)]
    return []
