"""DynamoDB's eventually consistent reads, which moto's are not.

A read without `ConsistentRead` is DynamoDB's default, and "the responses may not reflect the results of a
recently completed write operation. If you repeat your read request after a short time, the response should
eventually return the more recent item"; every read of a global secondary index is eventually consistent
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html). The page
gives no bound on "a short time". The check takes one second (`WINDOW`), its end included: a write that
completed at most one second before an eventually consistent read, on the reader's own clock, is not in what
that read sees. The read sees each table as it was before the first such write, whole (read-committed: a
write that failed is never seen, and a write is seen whole or not at all).

moto always reads the latest items, so for the function's own calls (inside a run's watch):

- each write (PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems, a PartiQL statement that is
  not a SELECT) that succeeds keeps the tables it names as they were before it, stamped with the time it
  completed on the writer's clock;
- each eventually consistent read (GetItem, Query and Scan without ConsistentRead or of a global secondary
  index, BatchGetItem per table, a PartiQL SELECT without ConsistentRead) is answered by moto from those
  tables as they were one second before, on the reader's clock.

The check's clean runs read the latest items (`fresh`): the clean run is the path every schedule is measured
against; every schedule reads as DynamoDB may.
Conditions, transactions and strongly consistent reads (ConsistentRead=True, TransactGetItems,
ExecuteTransaction) see the latest items, as DynamoDB judges them. The check's own reads and writes (its
uploads, its customer links, its read-back of the books) are outside every watch: not kept, never stale.
Not modelled: a read more than a second after a write that still misses it (the page allows it; the check
does not try it), and threads whose clocks went apart (a write kept on a later clock than a reader's
counts as within the reader's second).
"""
from __future__ import annotations

import contextlib
import copy
import functools
import weakref
from collections import defaultdict
from typing import Any, Callable, Iterator

from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler

#: how long after a write an eventually consistent read may still miss it, its end included (see above)
WINDOW = 1.0
#: moto's answers to the requests that read or write items (DynamoHandler's methods)
_REQUESTS = ("get_item", "batch_get_item", "query", "scan", "execute_statement", "batch_execute_statement",
             "put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items",
             "execute_transaction")
#: per run's watch, per table (by id: the table object beside its kept states): (when, the table's items
#: just before that write), in the order the writes were made
_kept: weakref.WeakKeyDictionary[Any, dict[int, tuple[Any, list[tuple[float, Any]]]]] = weakref.WeakKeyDictionary()
_hooks: dict[str, Callable[..., Any]] = {}
_fresh: list[bool] = []  # inside `fresh()`: every read sees the latest items


@contextlib.contextmanager
def fresh() -> Iterator[None]:
    """Every read inside sees the latest items (the check's clean runs)."""
    _fresh.append(True)
    try:
        yield
    finally:
        _fresh.pop()


def install(current: Callable[[], Any], own_time: Callable[[Any], float]) -> None:
    """Answer the function's eventually consistent reads as DynamoDB may, once per process. `current`: the
    running watch and invocation (idem.sim.boundary); `own_time`: the calling thread's time on a clock
    (idem.sim.runtime.thread_waits)."""
    _hooks.update(current=current, own_time=own_time)
    _wrap()


@functools.cache
def _wrap() -> None:
    for name in _REQUESTS:
        original = getattr(DynamoHandler, name)

        @functools.wraps(original)
        def answered(self: Any, __original: Any = original, __name: str = name) -> Any:
            return _answer(self, __name, __original)

        setattr(DynamoHandler, name, answered)


def _answer(handler: Any, name: str, original: Callable[[Any], Any]) -> Any:
    """moto's answer to the request `name`: for the function's own, an eventually consistent read answered
    from its tables as they were, and a write that succeeds kept with its tables as they were before it."""
    running = _hooks["current"]()
    clock = getattr(running[0], "clock", None) if running else None
    if clock is None:
        return original(handler)
    body, backend = handler.body if isinstance(handler.body, dict) else {}, handler.dynamodb_backend
    eventual = None if _fresh else eventually_read(name, body, backend)
    if eventual is not None:
        return _read_as_it_was(handler, original, eventual, _hooks["own_time"](clock), running)
    written = tables_written(name, body, backend)
    if not written:
        return original(handler)
    before = [(table, _copy(table.items)) for table in written]
    for table, key in updated_keys(name, body, backend):
        _detach(table, key)
    answer = original(handler)  # refused or cancelled: it raises, and nothing was written
    when, kept = _hooks["own_time"](clock), _kept.setdefault(running[0], {})
    for table, items in before:
        kept.setdefault(id(table), (table, []))[1].append((when, items))
    return answer


def _read_as_it_was(handler: Any, original: Callable[[Any], Any], tables: list[Any], now: float,
                    running: tuple[Any, Any]) -> Any:
    """moto's answer with each of `tables` as it was `WINDOW` seconds before `now` (the live one if no
    write of this run came since). The invocation's next crossing says so (`Visit.stale_read`)."""
    (watch, visit), kept, swapped = running, _kept.get(running[0], {}), []
    try:
        for table in tables:
            found = as_it_was(kept.get(id(table), (table, []))[1], now)
            if found is not None:
                swapped.append((table, table.items))
                table.items = _copy(found[1])  # moto's reads may add empty rows to a defaultdict: not to the kept one
                since = found[0] - getattr(watch.clock, "start", 0.0)
                visit.stale_read = (f"read eventually consistent: {table.name} as it was before "
                                    f"the write at t={since:.0f}s")
        return original(handler)
    finally:
        for table, live in reversed(swapped):
            table.items = live


def as_it_was(writes: list[tuple[float, Any]], now: float) -> tuple[float, Any] | None:
    """The first write completed within `WINDOW` of `now` (or later on its own clock), as (when, the items
    before it); None when every write is older: the read sees the latest items."""
    return next(((when, items) for when, items in writes if when >= now - WINDOW), None)


def eventually_read(name: str, body: dict[str, Any], backend: Any) -> list[Any] | None:
    """The tables a request reads eventually consistently ([] if it names none moto has), or None when it
    is no such read."""
    if name in ("get_item", "query", "scan"):
        index = body.get("IndexName")
        global_index = bool(index) and any(i.name == index for i in _global_indexes(backend, body.get("TableName")))
        if body.get("ConsistentRead") and not global_index:
            return None
        return _tables(backend, [body.get("TableName")])
    if name == "batch_get_item":
        requested = body.get("RequestItems") or {}
        return _tables(backend, [t for t, asked in requested.items()
                                 if not (isinstance(asked, dict) and asked.get("ConsistentRead"))])
    if name == "execute_statement":
        if _is_select(body.get("Statement")) and not body.get("ConsistentRead"):
            return list(backend.tables.values())
        return None
    if name == "batch_execute_statement":
        statements = [s for s in body.get("Statements") or [] if isinstance(s, dict)]
        if statements and all(_is_select(s.get("Statement")) and not s.get("ConsistentRead") for s in statements):
            return list(backend.tables.values())
    return None


def tables_written(name: str, body: dict[str, Any], backend: Any) -> list[Any]:
    """The tables a request may write (every table for PartiQL, which names them in its text)."""
    if name in ("put_item", "update_item", "delete_item"):
        return _tables(backend, [body.get("TableName")])
    if name == "batch_write_item":
        return _tables(backend, list(body.get("RequestItems") or {}))
    if name == "transact_write_items":
        return _tables(backend, [entry.get("TableName") for item in body.get("TransactItems") or []
                                 if isinstance(item, dict) for entry in item.values() if isinstance(entry, dict)])
    if name == "execute_statement":
        return [] if _is_select(body.get("Statement")) else list(backend.tables.values())
    if name in ("batch_execute_statement", "execute_transaction"):
        texts = [s.get("Statement") for s in body.get("Statements") or body.get("TransactStatements") or []
                 if isinstance(s, dict)]
        return list(backend.tables.values()) if any(not _is_select(t) for t in texts) else []
    return []


def updated_keys(name: str, body: dict[str, Any], backend: Any) -> list[tuple[Any, dict[str, Any]]]:
    """The items an UpdateItem (alone or in a transaction) changes in place in moto."""
    if name == "update_item":
        found = [(body.get("TableName"), body.get("Key"))]
    elif name == "transact_write_items":
        found = [(item["Update"].get("TableName"), item["Update"].get("Key"))
                 for item in body.get("TransactItems") or []
                 if isinstance(item, dict) and isinstance(item.get("Update"), dict)]
    else:
        return []
    return [(table, key) for table_name, key in found if isinstance(key, dict)
            for table in _tables(backend, [table_name])]


def _detach(table: Any, key: dict[str, Any]) -> None:
    """Put a copy of the item `key` names in its place, so moto's UpdateItem changes the copy and a kept
    state keeps the item as it was."""
    try:
        hashed = DynamoType(key[table.hash_key_attr])
        ranged = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    except (KeyError, TypeError, AttributeError):
        return  # moto answers what is wrong with the key
    rows = table.items
    if ranged is not None:
        rows = rows.get(hashed) or {}
        hashed = ranged
    if hashed in rows:
        rows[hashed] = copy.deepcopy(rows[hashed])


def _copy(items: Any) -> Any:
    """A table's items, their rows copied (an item itself is shared until an update detaches it)."""
    copied: defaultdict[Any, Any] = defaultdict(dict)
    for hashed, row in items.items():
        copied[hashed] = dict(row) if isinstance(row, dict) else row
    return copied


def _is_select(statement: Any) -> bool:
    return isinstance(statement, str) and statement.lstrip().upper().startswith("SELECT")


def _tables(backend: Any, names: list[Any]) -> list[Any]:
    found: list[Any] = []
    for name in dict.fromkeys(n for n in names if isinstance(n, str)):
        table = backend.tables.get(name) or next((t for t in backend.tables.values()
                                                  if getattr(t, "table_arn", None) == name), None)
        if table is not None and all(table is not other for other in found):
            found.append(table)
    return found


def _global_indexes(backend: Any, name: Any) -> list[Any]:
    """The global secondary indexes of the table `name` ([] if there is no such table)."""
    tables = _tables(backend, [name])
    return list(getattr(tables[0], "global_indexes", []) or []) if tables else []
