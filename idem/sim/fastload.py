"""A cold start's cost, without changing what a cold start does.

The local runtime loads a fresh copy of the function's module for every new container, as
Lambda runs the module's top level again on a cold start. Most of that time went to
`@dataclass`: for each class it writes the source of `__init__`, `__repr__`, `__eq__`, ...
and compiles it (keyed's module: about 4.4 ms a load, 1.1 ms with this, measured here).
The source is the same text for every copy of a module, so it is compiled once per
process and the code object reused. Each copy still gets its own functions and globals:
only the compiling is shared, never a function or a value.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
from typing import Any

_installed = False


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
