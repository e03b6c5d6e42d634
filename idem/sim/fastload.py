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

And which actions a response class answers: moto asks `inspect.getmembers` on every request;
`cache_moto_method_names` asks once per class (about 1% of a check).

And DynamoDB's condition expressions: moto cuts each into tokens with regular expressions it
compiles again for every token; `cache_moto_condition_lexing` keeps each expression's tokens.

And botocore's reading of S3's `Last-Modified` on every GetObject: `cache_timestamp_parsing`
reads each text once.

And moto's reading of each response member: for every member of every answer it serializes, it
asks six alias rules in turn which attribute of its model holds the member (about forty members a
GetObject); `cache_moto_alias_keys` keeps each rule's answer per member, model class and shape.

And the garbage collector: a check makes millions of short-lived objects (each request's,
each invocation's), and at Python's default thresholds the collector ran about 1,400 times in
a check of the handler to copy, 6% of its time. `fewer_collections` raises the thresholds
while a batch runs (about 90 collections, 2%) and puts them back after.
"""
from __future__ import annotations

import builtins
import collections
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


def cache_moto_method_names() -> None:
    """Make moto list each response class's methods once per process: for every request it
    asks `inspect.getmembers` which actions the class answers (a class's methods do not change
    while a check runs). Safe to call twice."""
    from moto.core import responses

    found = responses.method_names_from_class
    if getattr(found, "cached_by_idem", False):
        return
    names: dict[type, list[str]] = {}

    def method_names(clazz: Any) -> list[str]:
        listed = names.get(clazz)
        if listed is None:
            listed = names[clazz] = found(clazz)
        return listed

    method_names.cached_by_idem = True  # type: ignore[attr-defined]
    method_names.moto_own = found  # type: ignore[attr-defined]
    responses.method_names_from_class = method_names  # type: ignore[assignment]


#: condition expressions whose tokens are kept (a check's handlers write a few dozen)
LEXED_EXPRESSIONS = 4096
_lexed: dict[str, tuple[tuple[Any, Any, str, str], ...]] = {}


def cache_moto_condition_lexing() -> None:
    """Make moto cut each DynamoDB condition expression into tokens once per process: it
    compiles six regular expressions for every token of every conditional write (about a
    million `re.compile` calls in a check). Each write still gets its own fresh tokens, made
    from the kept (kind, text) of each; only the reading of the text is shared. An expression
    moto cannot read is read again (and refused again) each time. Safe to call twice."""
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lex = ConditionExpressionParser._lex_condition_expression
    if getattr(lex, "cached_by_idem", False):
        return

    def lexed(parser: Any) -> Any:
        expression = parser.condition_expression
        tokens = _lexed.get(expression)
        if tokens is None:
            tokens = tuple((n.nonterminal, n.kind, n.text, n.value) for n in lex(parser))
            if len(_lexed) >= LEXED_EXPRESSIONS:
                _lexed.clear()
            _lexed[expression] = tokens
        return collections.deque(parser.Node(*token, []) for token in tokens)

    lexed.cached_by_idem = True  # type: ignore[attr-defined]
    lexed.moto_own = lex  # type: ignore[attr-defined]
    ConditionExpressionParser._lex_condition_expression = lexed  # type: ignore[method-assign]


def cache_timestamp_parsing() -> None:
    """Make botocore read each timestamp text once per process (and per TZ, which a text without
    a zone is read in): S3's `Last-Modified` goes through dateutil's general parser on every
    GetObject and HeadObject, a third of a millisecond each. A datetime cannot be changed, so
    handing the same one out again is safe. Clients made afterwards use it. Safe to call twice."""
    from botocore import parsers

    parse = parsers.DEFAULT_TIMESTAMP_PARSER
    if getattr(parse, "cached_by_idem", False):
        return

    @functools.lru_cache(maxsize=4096)
    def parsed(text: str, zone: str | None) -> Any:
        return parse(text)

    def parse_timestamp(value: Any) -> Any:
        return parsed(value, os.environ.get("TZ")) if isinstance(value, str) else parse(value)

    parse_timestamp.cached_by_idem = True  # type: ignore[attr-defined]
    parse_timestamp.botocore_own = parse  # type: ignore[attr-defined]
    parsers.DEFAULT_TIMESTAMP_PARSER = parse_timestamp


def cache_moto_alias_keys() -> None:
    """Make moto work out once per process where each response member's value may be found: its
    AttributePicker asks every alias rule (`serialize.DEFAULT_ALIAS_PROVIDERS`) about each member of
    each answer. The rules read only the member's name, the object's class (its name, its `Meta`),
    the member's shape and the shape's parent: the same answer for the same of each, so the keys are
    kept under them (with the objects themselves, so no id is reused while kept). Each answer's
    values are still read from its own object. Safe to call twice."""
    from moto.core import serialize

    own = serialize.AttributePicker.get_possible_keys
    if getattr(own, "cached_by_idem", False):
        return
    kept: dict[tuple[Any, ...], tuple[tuple[str, ...], Any]] = {}

    def get_possible_keys(picker: Any, context: Any) -> tuple[str, ...]:
        obj, shape = context.obj, context.shape
        meta, parent = getattr(obj, "Meta", None), getattr(shape, "parent", None)
        key = (tuple(picker.alias_providers), type(obj), id(meta), context.key, id(shape), id(parent))
        found = kept.get(key)
        if found is None:
            if len(kept) >= ALIAS_KEYS:
                kept.clear()
            found = kept[key] = (tuple(own(picker, context)), (meta, shape, parent))
        return found[0]

    get_possible_keys.cached_by_idem = True  # type: ignore[attr-defined]
    get_possible_keys.moto_own = own  # type: ignore[attr-defined]
    serialize.AttributePicker.get_possible_keys = get_possible_keys  # type: ignore[method-assign, assignment]


#: response members whose alias keys are kept (a check's answers have a few thousand)
ALIAS_KEYS = 65_536


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
