"""Every patch the workbook makes to moto, in one place, for the moto it was measured on.

1. Atomic conditional writes. moto evaluates a ConditionExpression by reading the current
   item, checking it, then writing, with no lock in between: two threads can both read
   "absent" and both win a `attribute_not_exists` put. DynamoDB itself evaluates the
   condition and the write as one operation on the item. One lock around the backend's
   write paths restores that.
2. Item-scoped transactions. moto backs up every table a TransactWriteItems touches with a
   deep copy of the whole table, so a transaction slows down as the table grows (about
   3 ms on an empty table, 25 ms at 1,000 items, measured here). DynamoDB's cost per
   transaction does not depend on the table's size. The patch backs up only the items the
   transaction names, with the same all-or-nothing result.
"""
from __future__ import annotations

import copy
import functools
import threading
import time
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import moto
from moto.dynamodb import models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models import table as moto_table

#: The moto these patches were written against and measured on (pyproject pins the same).
MOTO_SERIES = "5.2."

_LOCK = threading.RLock()
_GUARDED = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "scan")
_originals: dict[str, Callable[..., Any]] = {}


def check_moto_version() -> None:
    """The patches reach into moto's internals: refuse a moto they were not measured on."""
    if not moto.__version__.startswith(MOTO_SERIES):
        raise RuntimeError(f"idem.sim.atomic patches moto {MOTO_SERIES}x, found {moto.__version__}: "
                           "install the pinned version (make install) or re-measure the patches")


def make_dynamodb_atomic() -> None:
    """Wrap the backend's write (and read) methods in one lock. Safe to call twice."""
    check_moto_version()
    for name in _GUARDED:
        if name in _originals:
            continue
        original = getattr(DynamoDBBackend, name)
        _originals[name] = original

        @functools.wraps(original)
        def locked(self: DynamoDBBackend, *args: Any, __original=original, **kwargs: Any) -> Any:
            with _LOCK:
                return __original(self, *args, **kwargs)

        setattr(DynamoDBBackend, name, locked)


def restore_moto_dynamodb() -> None:
    """Undo the patch: moto's own, racy behaviour (for showing why the patch matters)."""
    for name, original in _originals.items():
        setattr(DynamoDBBackend, name, original)
    _originals.clear()


def is_atomic() -> bool:
    return bool(_originals)


@contextmanager
def unpatched() -> Iterator[None]:
    """Run a block against moto as it ships, then put the lock back."""
    was_atomic = is_atomic()
    restore_moto_dynamodb()
    try:
        yield
    finally:
        if was_atomic:
            make_dynamodb_atomic()


@contextmanager
def widened_condition_window(seconds: float = 0.002) -> Iterator[None]:
    """Pause between moto's read of the current item and its write.

    The race in unpatched moto is real but rare; this makes it happen every time, so a
    test can prove the lock is what prevents it.
    """
    original = moto_table.get_filter_expression

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return original(*args, **kwargs)

    moto_table.get_filter_expression = slow
    try:
        yield
    finally:
        moto_table.get_filter_expression = original


def make_transactions_item_scoped() -> None:
    """Install `item_scoped_transactions` for the rest of the process. Safe to call twice."""
    global _scoped
    if _scoped is None:
        _scoped = item_scoped_transactions()
        _scoped.__enter__()


_scoped: Any = None


@contextmanager
def item_scoped_transactions() -> Iterator[None]:
    """While open, moto's TransactWriteItems backs up the items it touches, not whole tables."""
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items
    shim = types.ModuleType("copy")
    shim.__dict__.update(vars(copy))
    shim.deepcopy = lambda obj, memo=None: obj if isinstance(obj, Table) else copy.deepcopy(obj, memo)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _LOCK:
            try:
                saved = [(name, key, copy.deepcopy(self.get_item(name, key)))
                         for name, key in _touched(self, transact_items)]
            except Exception:  # a malformed request: let moto's own code say what is wrong
                return original(self, transact_items)
            models.copy = shim  # the whole-table backup becomes a reference, restored below
            try:
                return original(self, transact_items)
            except Exception:
                for name, key, item in saved:
                    if item is None:
                        self.delete_item(name, key)
                    else:
                        self.put_item(name, item.to_json()["Attributes"])
                raise
            finally:
                models.copy = copy

    models.DynamoDBBackend.transact_write_items = transact_write_items
    try:
        yield
    finally:
        models.DynamoDBBackend.transact_write_items = original


def _touched(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(table, key) of every item a transaction names."""
    found = []
    for entry in transact_items:
        kind, op = next(iter(entry.items()))
        table = backend.get_table(op["TableName"])
        if kind == "Put":
            names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
            key = {name: op["Item"][name] for name in names}
        else:
            key = op["Key"]
        found.append((op["TableName"], key))
    return found
