"""DynamoDB's refusal of a BatchWriteItem that names one item twice, which moto answers only for whole
items written twice.

AWS: "If one or more of the following is true, DynamoDB rejects the entire batch write operation: [...]
You try to perform multiple operations on the same item in the same BatchWriteItem request. For example,
you cannot put and delete the same item in the same BatchWriteItem request. [...] Your request contains
at least two items with identical hash and range keys (which essentially is two put operations)."
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)

moto 5.2 refuses two puts only when the two items are equal in every attribute, and never a put and a
delete of one key: two orders of one batch written to one key (a ledger line keyed without the account)
land one over the other, where DynamoDB refuses the batch and nothing lands. Here the items' keys are
compared per table, by the table's key schema, before moto writes anything; a repeat is refused with
the ValidationException DynamoDB answers ("Provided list of item keys contains duplicates").
"""
from __future__ import annotations

import functools
import json
from typing import Any

from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.responses import DynamoHandler

_installed: list[Any] = []


def _item_key(request: Any, hash_key: str, range_key: str | None) -> str | None:
    """The key one PutRequest or DeleteRequest writes, as text; None when it is not readable (moto answers)."""
    if not isinstance(request, dict) or len(request) != 1:
        return None
    kind, body = next(iter(request.items()))
    attributes = (body or {}).get("Item" if kind == "PutRequest" else "Key") if isinstance(body, dict) else None
    if not isinstance(attributes, dict):
        return None
    names = (hash_key, range_key) if range_key else (hash_key,)
    return json.dumps([attributes.get(name) for name in names], sort_keys=True)


def repeated_key(handler: Any, request_items: Any) -> str | None:
    """The first table in which two requests of the batch name one item, or None."""
    if not isinstance(request_items, dict):
        return None
    for table_name, requests in request_items.items():
        table = handler.dynamodb_backend.tables.get(table_name)
        if table is None or not isinstance(requests, list):
            continue  # moto answers what is wrong with it
        keys = [_item_key(r, table.hash_key_attr, table.range_key_attr) for r in requests]
        known = [k for k in keys if k is not None]
        if len(known) != len(set(known)):
            return str(table_name)
    return None


def refuse_repeated_batch_keys() -> None:
    """Wrap moto's BatchWriteItem so a batch naming one item twice is refused whole. Safe to call twice."""
    if _installed:
        return
    original = DynamoHandler.batch_write_item
    _installed.append(original)

    @functools.wraps(original)
    def batch_write_item(self: Any) -> Any:
        if repeated_key(self, self.body.get("RequestItems")) is not None:
            raise MockValidationException("Provided list of item keys contains duplicates")
        return original(self)

    DynamoHandler.batch_write_item = batch_write_item  # type: ignore[method-assign]
