"""Make moto's DynamoDB conditional writes atomic under threads.

moto evaluates a ConditionExpression by reading the current item, checking it, then
writing, with no lock in between: two threads can both read "absent" and both win a
`attribute_not_exists` put. DynamoDB itself evaluates the condition and the write as one
operation on the item. One lock around the backend's write paths restores that.
"""
from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models import table as moto_table

_LOCK = threading.RLock()
_GUARDED = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "scan")
_originals: dict[str, Callable[..., Any]] = {}


def make_dynamodb_atomic() -> None:
    """Wrap the backend's write (and read) methods in one lock. Safe to call twice."""
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
