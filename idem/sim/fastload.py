"""A cold start's cost, without changing what a cold start does.

The local runtime loads a fresh copy of the function's module for every new container, as
Lambda runs the module's top level again on a cold start. Most of that time went to
`@dataclass`: for each class it writes the source of `__init__`, `__repr__`, `__eq__`, ...
and compiles it (keyed's module: about 4.4 ms a load, 1.1 ms with this, measured here).
The source is the same text for every copy of a module, so it is compiled once per
process and the code object reused. Each copy still gets its own functions and globals:
only the compiling is shared, never a function or a value.

And each request's way to moto's answer: for every request, moto builds its service's table of
URL patterns afresh (S3's even reloads its `urls` module, in case an environment variable named
other endpoints; moto's own comment there says the table could be cached). The table is kept per
service and per value of the two variables it depends on, MOTO_S3_CUSTOM_ENDPOINTS and
MOTO_ENABLE_ISO_REGIONS: the same patterns, built once (about a tenth of a check's time).

And the garbage collector: a check makes millions of short-lived objects (each request's,
each invocation's), and at Python's default thresholds the collector ran about 1,400 times in
a check of the handler to copy, 6% of its time. `fewer_collections` raises the thresholds
while a batch runs (about 90 collections, 2%) and puts them back after.
"""
from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import gc
import os
from typing import Any, Callable, Iterator

_installed = False
_URL_SETTINGS = ("MOTO_S3_CUSTOM_ENDPOINTS", "MOTO_ENABLE_ISO_REGIONS")
_url_tables: dict[tuple[Any, ...], dict[str, Callable[..., Any]]] = {}
_build_urls: Callable[[Any], dict[str, Callable[..., Any]]] | None = None  # moto's own


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> Any:
    return compile(source, "<string>", "exec")


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:
    builtins.exec(_compiled(source) if isinstance(source, str) else source, globals, locals)


def cache_dataclass_compiles() -> None:
    """Make `dataclasses` compile each generated method's text once per process. Safe to
    call twice. (dataclasses calls `exec` by its global name; a module global shadows the
    builtin for that module only.)"""
    global _installed
    if not _installed:
        dataclasses.exec = _exec  # type: ignore[attr-defined]
        _installed = True


def cache_moto_url_tables() -> None:
    """Make moto build each service's URL table once per process (and per value of the
    settings it reads). Safe to call twice."""
    from moto.core.base_backend import BaseBackend

    global _build_urls
    built: Any = vars(BaseBackend).get("urls")  # the property itself
    if not isinstance(built, property) or built.fget is None or built.fget.__name__ == "cached_urls":
        return
    _build_urls = built.fget

    def cached_urls(backend: Any) -> dict[str, Callable[..., Any]]:
        key = (type(backend), *(os.environ.get(name) for name in _URL_SETTINGS))
        table = _url_tables.get(key)
        if table is None:
            table = _url_tables[key] = built_by_moto(backend)
        return table

    cached = property(cached_urls, doc=built.__doc__)
    BaseBackend.urls = cached  # type: ignore[method-assign, assignment]


def built_by_moto(backend: Any) -> dict[str, Callable[..., Any]]:
    """`backend`'s URL table as moto builds it, now (once `cache_moto_url_tables` ran)."""
    if _build_urls is None:
        raise RuntimeError("cache_moto_url_tables has not run in this process")
    return _build_urls(backend)


#: the collector's thresholds while a batch of schedules runs (Python's default: 700, 10, 10):
#: a collection of the youngest objects every 20,000 allocations net, not 700
BATCH_GC_THRESHOLDS = (20_000, 20, 20)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while it lasts; the thresholds as they were afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
