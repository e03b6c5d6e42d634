"""Every patch the workbook makes to moto, in one place, for the moto it was measured on.

1. Atomic requests. moto evaluates a ConditionExpression by reading the current
   item, checking it, then writing, with no lock in between: two threads can both read
   "absent" and both win a `attribute_not_exists` put. DynamoDB itself evaluates the
   condition and the write as one operation on the item. And moto builds a request's answer
   from the live item after its backend has returned: an UpdateItem's `ReturnValues` can show
   another thread's later write (two `ADD n :one` counters both answered n=12, and the
   provider stand-in gave two charges one id, the second overwriting the first; measured
   here, 4 races in 80 with both cores busy). DynamoDB answers from the item as the request
   left it. One lock around every DynamoDB request moto serves (parse, backend, answer), and
   around the backend's methods for the callers that reach the backend directly, restores both.
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
from moto.dynamodb.responses import DynamoHandler

#: The moto these patches were written against and measured on (pyproject pins the same).
MOTO_SERIES = "5.2."

_LOCK = threading.RLock()
#: What the lock wraps: each DynamoDB request moto serves, whole (DynamoHandler.call_action
#: parses it, calls the backend and builds the answer), and the backend's methods that
#: world.py and the item-scoped transactions call directly.
_GUARDED: tuple[tuple[type, str], ...] = (
    (DynamoHandler, "call_action"),
    *((DynamoDBBackend, name) for name in
      ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "scan")),
)
_originals: dict[tuple[type, str], Callable[..., Any]] = {}


def check_moto_version() -> None:
    """The patches reach into moto's internals: refuse a moto they were not measured on."""
    if not moto.__version__.startswith(MOTO_SERIES):
        raise RuntimeError(f"idem.sim.atomic patches moto {MOTO_SERIES}x, found {moto.__version__}: "
                           "install the pinned version (make install) or re-measure the patches")


def make_dynamodb_atomic() -> None:
    """Wrap every DynamoDB request (and the backend's methods) in one lock. Safe to call twice."""
    check_moto_version()
    for owner, name in _GUARDED:
        if (owner, name) in _originals:
            continue
        original = owner.__dict__[name]
        _originals[(owner, name)] = original

        @functools.wraps(original)
        def locked(self: Any, *args: Any, __original=original, **kwargs: Any) -> Any:
            with _LOCK:
                return __original(self, *args, **kwargs)

        setattr(owner, name, locked)


def restore_moto_dynamodb() -> None:
    """Undo the patch: moto's own, racy behaviour (for showing why the patch matters)."""
    for (owner, name), original in _originals.items():
        setattr(owner, name, original)
    _originals.clear()


def is_atomic() -> bool:
    return bool(_originals)


@contextmanager
def unpatched() -> Iterator[None]:
    """Run a block against moto as it ships, then put back exactly what was there (the lock,
    and the item-scoped transactions, which wrap the locked transact_write_items)."""
    saved = {(owner, name): owner.__dict__[name] for owner, name in _GUARDED}
    saved_originals = dict(_originals)
    restore_moto_dynamodb()
    try:
        yield
    finally:
        for (owner, name), method in saved.items():
            setattr(owner, name, method)
        _originals.update(saved_originals)


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


@contextmanager
def held_condition_gap(parties: int, condition: str = "attribute_not_exists(pk)") -> Iterator[threading.Barrier]:
    """Hold every put with `condition` between moto's read of the current item and its check,
    until `parties` of them are there: the order in which every racer has read "absent"
    before any of them writes. It forces moto's race every time, without waiting for luck
    or a timing window.

    Only for moto without the lock (`unpatched()`): with the lock, the first put would hold it
    at the barrier while the others wait for it. The barrier's timeout (60 s) then breaks it
    (BrokenBarrierError), so a mistake fails instead of hanging.
    """
    original = moto_table.get_filter_expression
    gap = threading.Barrier(parties, timeout=60)

    def held(expression: Any, *args: Any, **kwargs: Any) -> Any:
        if expression == condition:
            gap.wait()
        return original(expression, *args, **kwargs)

    moto_table.get_filter_expression = held
    try:
        yield gap
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
