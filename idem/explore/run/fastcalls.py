"""A handler's call to the check's local AWS, made cheaper while a batch of schedules runs, with the
same requests reaching moto and the same answers coming back (docs/reliability.md, "How long the
check takes"). Each piece is undone when the batch ends (`fast_calls`).

- **No signature worked out.** botocore signs every request with SigV4: a canonical request,
  a SHA-256 of it and five HMACs (about a tenth of a call's cost, measured here). moto reads of
  the `Authorization` header only its access key and its region (the credential scope); it checks
  no signature unless its IAM authorization is switched on, which the check never does. Inside a
  batch the header is written as botocore writes it (the same credential scope and signed
  headers, `X-Amz-Date`, the session token, S3's `X-Amz-Content-SHA256`) with a signature of
  zeros. Presigned URLs and POST policies (the query and post signers) are signed in full: a
  handler may hand one out, and what it writes is judged.
- **An item's size added up once.** moto checks DynamoDB's 400 KB item limit by adding up the
  whole item again for every attribute it sets while building an item from a request (an item of
  n attributes costs n x n sizes). Built here, each attribute's size is added to the sum of those
  before it, once: the same sums, the same limit refused at the same attribute.
- **A URL's way to moto's method found once.** For every request moto tries each service's URL
  pattern in turn, then each of the service's URLs (compiling it), to find the method that answers
  (about 90 regular expressions a request). The service and method it finds for a URL are kept
  (with the settings its URL tables depend on); the rest of moto's way (its passthrough and
  allow-list settings, the request as moto reads it, its recorder, the method itself) runs for
  every request. A URL whose first matching service has no method for it goes moto's own way.
- **An expression read once.** moto parses a write's ConditionExpression into a tree of conditions
  twice a PutItem (its answer checks the names used, its table checks the item) and an
  UpdateExpression twice an UpdateItem; a check sends the same few expressions thousands of times
  (`attribute_not_exists(pk)` in about half its 12,000 parses). The condition tree moto built for
  the same text, names and values is kept (built from a copy of them; moto only reads the tree:
  its `expr` compares an item with it), and so is the update's tree for the same text (moto's
  validator works on its own deep copy of it). An expression moto refuses is parsed (and refused)
  again each time.
- **A request's environ written plainly.** moto turns each request botocore sends into a werkzeug
  Request through werkzeug's EnvironBuilder (its URL read through `iri_to_uri`, its headers
  checked, copied and combined). What depends on the URL alone (method, scheme, host, path and
  query, as WSGI names them) is what werkzeug's own builder wrote for that URL, kept; the body and
  the headers are written as its `get_environ` writes them, in the same order. A body that is not
  bytes or text, a bodiless request with a Content-Type (a form to encode), a header that is not
  plain text: moto's own way.
- **A name snake-cased once.** For every request moto turns its action's name, and each of a
  queue's attributes each time they are read, from `ReceiveMessageWaitTimeSeconds` into
  `receive_message_wait_time_seconds` character by character. Each name is turned once (the same
  text always gives the same name). (Which methods a class answers is listed once per process
  already: `idem.sim.fastload.cache_moto_method_names`.)
- **Request ids drawn plainly.** moto gives every answer a request id of 52 letters and digits,
  each drawn with `random.choice`. They are drawn here with the same calls to the same seeded
  generator (`getrandbits` of the same width, the same draws refused), so every id after them,
  a version id or a message id, comes out as before.
- **Attribute values copied as they are.** DynamoDB's attribute values in requests and answers,
  where moto's walk would give them back unchanged (`idem.explore.run.fast_items`).
- **Headers and hosts read once.** botocore's reading of an answer's headers,
  and moto's judging of an S3 request's host (`idem.explore.run.fast_reads`).
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import io
import json
import sys
from collections import defaultdict
import threading
from typing import Any, Iterator

from . import fast_items, fast_reads

#: the signature written into a request inside a batch (moto checks none)
UNCHECKED_SIGNATURE = "0" * 64
#: The moto releases whose request path and item sizing _routes_kept and _items_sized_once follow step
#: by step (the reports compared whole, docs/reliability.md); under any other moto runs its own way
#: (moto 5.2.0, the floor, has no botocore_stubber.normalize_request).
MOTO_FOLLOWED = ("5.2.5",)
_lock = threading.Lock()
_depth = 0
_undo: list[Any] = []


@contextlib.contextmanager
def fast_calls() -> Iterator[None]:
    """While it lasts (nested or in several threads: installed by the first, undone by the last),
    requests are signed without a signature worked out, moto's items are sized once and each URL's
    way to moto's method is found once."""
    global _depth
    with _lock:
        if _depth == 0:
            _undo.append(_unsigned_requests())
            if moto_version() in MOTO_FOLLOWED:  # they copy moto's own steps: under another, moto's way
                _undo.extend((_items_sized_once(), _routes_kept(), _conditions_parsed_once(),
                              _updates_parsed_once(), _requests_built_plainly(), _names_snake_cased_once(),
                              _random_strings_drawn_plainly(), fast_items.values_written_plainly(),
                              fast_items.values_read_plainly(), fast_reads.hosts_judged_once()))
            if fast_reads.botocore_version() in fast_reads.BOTOCORE_FOLLOWED:
                _undo.append(fast_reads.headers_read_once())
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                while _undo:
                    _undo.pop()()


@functools.cache
def moto_version() -> str:
    """moto's release, read once per process (importlib.metadata walks sys.path for it: a
    millisecond or more, at every batch)."""
    from importlib.metadata import version

    return version("moto")


def _unsigned_requests() -> Any:
    """SigV4's header signers (the plain and S3's) write their header without working out the signature."""
    from botocore import auth
    from botocore.exceptions import NoCredentialsError

    own = auth.SigV4Auth.add_auth
    header_signers = (auth.SigV4Auth, auth.S3SigV4Auth)  # not the query, post or S3 Express signers

    def add_auth(self: Any, request: Any) -> None:
        if type(self) not in header_signers:
            return own(self, request)
        if self.credentials is None:
            raise NoCredentialsError()
        # as botocore's add_auth, without the canonical request, its hash and the signing key
        request.context["timestamp"] = _signing_time(auth).strftime(auth.SIGV4_TIMESTAMP)
        self._modify_request_before_signing(request)
        self._inject_signature_to_request(request, UNCHECKED_SIGNATURE)
        return None

    auth.SigV4Auth.add_auth = add_auth  # type: ignore[method-assign]

    def undo() -> None:
        auth.SigV4Auth.add_auth = own  # type: ignore[method-assign]
    return undo


def _signing_time(auth: Any) -> datetime.datetime:
    """The time botocore signs with: its get_current_datetime where it has one; older botocore (the
    floor boto3 1.35 brings) reads the UTC time itself, naive, as this does."""
    current = getattr(auth, "get_current_datetime", None)
    return current() if current else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _items_sized_once() -> Any:
    """moto's Item built with each attribute's size added once to a running sum (see the module)."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models import dynamo_type
    from moto.dynamodb.models.utilities import bytesize

    item_class, limited = dynamo_type.Item, dynamo_type.LimitedSizeDict
    own = item_class.__init__
    kind = dynamo_type.DynamoType

    def size_of(thing: Any) -> int:  # as LimitedSizeDict.__setitem__ sizes a key or a value
        return thing.size() if type(thing) is kind else bytesize(str(thing))

    def __init__(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = limited()
        total = 0  # the sizes of the keys and values already set, as moto's __setitem__ adds them up
        for key, value in attrs.items():
            typed = kind(value)  # (each key once: `attrs` is a dict)
            # moto's check for this attribute: (keys and values so far) + (this key and value)
            if total + bytesize(key) + size_of(typed) > ITEM_LIMIT:
                raise ItemSizeTooLarge
            dict.__setitem__(self.attrs, key, typed)
            total += size_of(key) + size_of(typed)

    item_class.__init__ = __init__  # type: ignore[method-assign]

    def undo() -> None:
        item_class.__init__ = own  # type: ignore[method-assign]
    return undo


#: moto's own limit in LimitedSizeDict.__setitem__ (between DynamoDB's 400 KB and what it accepts)
ITEM_LIMIT = 405_000


def _routes_kept() -> Any:
    """moto's way from a request's URL to the method that answers it, found once per URL (see the module)."""
    import os
    import re

    import moto.backend_index as backend_index
    from moto.core import botocore_stubber as stubber

    own = stubber.BotocoreStubber.process_request
    routes: dict[tuple[Any, ...], tuple[str, Any]] = {}

    def process_request(self: Any, request: Any) -> Any:
        from moto.core.exceptions import HTTPException
        from moto.moto_api import recorder

        parsed_url, _ = stubber.get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        key = (clean_url, *(os.environ.get(name) for name in _URL_SETTINGS))
        route = routes.get(key)
        if route is None:
            route = _route(clean_url)
            if route is None:  # none, or not at the first service whose pattern matches: moto's own way
                return own(self, request)
            if len(routes) >= ROUTES:
                routes.clear()
            routes[key] = route
        service, method = route
        # from here as moto's process_request, once it found `method` for `clean_url`
        if stubber.passthrough_url(clean_url) or stubber.passthrough_service(service):
            return None
        if not stubber.service_whitelisted(service):
            raise stubber.ServiceNotWhitelisted(service)
        normalized = stubber.normalize_request(request)
        try:
            recorder._record_request(normalized)
            status, headers, body = method(normalized, normalized.raw_url, normalized.headers)
        except HTTPException as e:
            status, headers, body = e.code, e.get_headers(), e.get_body()
        return status, headers, body

    def _route(clean_url: str) -> tuple[str, Any] | None:
        """The service and method moto's process_request finds for `clean_url`: the first service
        whose pattern matches, the first of its backend's URLs that matches (None if that service
        has none: moto then goes on to the next service, and so does this request)."""
        import moto.backends as backends
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.core.base_backend import BackendDict

        for service, pattern in backend_index.backend_url_patterns:
            if pattern.match(clean_url):
                backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
                if isinstance(backend_dict, BackendDict):
                    account = backend_dict[DEFAULT_ACCOUNT_ID]
                    backend = account["us-east-1"] if "us-east-1" in account else account["aws"]
                else:
                    backend = backend_dict["global"]
                return next(((service, method) for url, method in backend.urls.items()
                             if re.compile(url).match(clean_url)), None)
        return None

    stubber.BotocoreStubber.process_request = process_request  # type: ignore[method-assign]

    def undo() -> None:
        stubber.BotocoreStubber.process_request = own  # type: ignore[method-assign]
    return undo


def _conditions_parsed_once() -> Any:
    """moto's condition tree for a text, its names and values, built once (see the module)."""
    from moto.dynamodb.comparisons import ConditionExpressionParser as parser_class

    own = parser_class.parse
    kept: dict[tuple[Any, str, str], tuple[Any, tuple[str, ...], tuple[str, ...]]] = {}

    def parse(self: Any) -> Any:
        try:
            names = json.dumps(self.expression_attribute_names, sort_keys=True)
            values = json.dumps(self.expression_attribute_values, sort_keys=True)
        except (TypeError, ValueError):  # not JSON's kinds: moto's own way
            return own(self)
        key = (self.condition_expression, names, values)
        found = kept.get(key)
        if found is None:
            private = parser_class(self.condition_expression, json.loads(names), json.loads(values))
            found = (own(private), tuple(private.expr_attr_names_found), tuple(private.expr_attr_values_found))
            if len(kept) >= EXPRESSIONS:
                kept.clear()
            kept[key] = found
        tree, names_found, values_found = found
        self.expr_attr_names_found.extend(names_found)  # as moto's parse records them
        self.expr_attr_values_found.extend(values_found)
        return tree

    parser_class.parse = parse  # type: ignore[method-assign]

    def undo() -> None:
        parser_class.parse = own  # type: ignore[method-assign]
    return undo


def _updates_parsed_once() -> Any:
    """moto's UpdateExpression tree for a text, built once (see the module)."""
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser as parser_class

    own = parser_class.__dict__["make"]
    make_tree = own.__func__
    kept: dict[str, Any] = {}

    def make(cls: Any, expression: str) -> Any:
        tree = kept.get(expression)
        if tree is None:
            tree = make_tree(cls, expression)
            if len(kept) >= EXPRESSIONS:
                kept.clear()
            kept[expression] = tree
        return tree

    parser_class.make = classmethod(make)  # type: ignore[method-assign,assignment]

    def undo() -> None:
        parser_class.make = own  # type: ignore[method-assign]
    return undo


def _requests_built_plainly() -> Any:
    """moto's Request.from_primitives with the environ written as werkzeug writes it (see the module)."""
    from moto.core import request as moto_request

    request_class = moto_request.Request
    own = request_class.__dict__["from_primitives"]
    urls: dict[tuple[str, ...], dict[str, Any]] = {}

    def from_primitives(cls: Any, method: str, url: str, headers: Any, body: Any = None) -> Any:
        plain = plain_environ(method, url, headers, body, urls) if cls is request_class else None
        if plain is None:
            return own.__func__(cls, method, url, headers, body)
        environ, header_items = plain
        request = cls(environ)
        # from here as moto's from_primitives, once werkzeug's builder returned its request
        request.environ[moto_request.PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {
            moto_request.environ_key_for_header(key): key
            for key, _ in header_items if moto_request.should_preserve_original_header_name(key)}
        request.environ.setdefault("CONTENT_LENGTH", "0")
        return request

    request_class.from_primitives = classmethod(from_primitives)  # type: ignore[method-assign,assignment]

    def undo() -> None:
        request_class.from_primitives = own  # type: ignore[method-assign]
    return undo


def _names_snake_cased_once() -> Any:
    """moto's snake_case of a name, made once per name (see the module)."""
    from moto.core import responses
    from moto.sqs import models as sqs_models

    own = responses.camelcase_to_underscores
    responses.camelcase_to_underscores = sqs_models.camelcase_to_underscores = functools.lru_cache(
        maxsize=EXPRESSIONS)(own)

    def undo() -> None:
        responses.camelcase_to_underscores = sqs_models.camelcase_to_underscores = own
    return undo


def _random_strings_drawn_plainly() -> Any:
    """moto's random strings (request ids) from the same draws of the same generator (see the module)."""
    import string

    from moto.moto_api._internal.moto_random import MotoRandom

    own = MotoRandom.get_random_string

    def get_random_string(self: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
        pool = string.ascii_letters + (string.digits if include_digits else "")
        # as random.choice(pool) draws, each time: _randbelow_with_getrandbits(len(pool))
        size, draw = len(pool), self.getrandbits
        width = size.bit_length()
        chosen = []
        for _ in range(length):
            at = draw(width)
            while at >= size:
                at = draw(width)
            chosen.append(pool[at])
        text = "".join(chosen)
        return text.lower() if lower_case else text

    MotoRandom.get_random_string = get_random_string  # type: ignore[method-assign]

    def undo() -> None:
        MotoRandom.get_random_string = own  # type: ignore[method-assign]
    return undo


def plain_environ(method: str, url: str, headers: Any, body: Any, urls: dict[tuple[str, ...], dict[str, Any]]
                  ) -> tuple[dict[str, Any], list[tuple[str, str]]] | None:
    """The environ werkzeug's EnvironBuilder writes for moto's from_primitives (method, url, the
    headers and body botocore sends) and the headers as moto reads them, or None where this does not
    follow it (see the module). `urls`: what each URL's part of the environ was, kept."""
    from urllib.parse import urlparse

    from werkzeug.test import EnvironBuilder

    if isinstance(body, str):
        body = body.encode()
    if body is None:
        body = b""
    if not isinstance(body, bytes):  # a stream (AwsChunkedWrapper, a file): moto's own way
        return None
    header_items = []
    for key, value in headers.items():  # as moto's from_primitives reads them
        if key.lower() == "transfer-encoding":
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if type(key) is not str or type(value) is not str or "\r" in value or "\n" in value:
            return None
        header_items.append((key, value))
    lowered = [key.lower() for key, _ in header_items]
    if not body and "content-type" in lowered:  # werkzeug would encode a form: its own way
        return None
    parsed_url = urlparse(url)
    where = (method, f"{parsed_url.scheme}://{parsed_url.netloc}", parsed_url.path, parsed_url.query)
    kept = urls.get(where)
    if kept is None:
        builder = EnvironBuilder(method=where[0], base_url=where[1], path=where[2], query_string=where[3])
        try:
            kept = builder.get_environ()
        finally:
            builder.close()
        if len(urls) >= ROUTES:
            urls.clear()
        urls[where] = kept
    environ = dict(kept)
    environ["wsgi.input"] = io.BytesIO(body)
    environ["wsgi.errors"] = sys.stderr  # as the builder reads it, at each request
    # as get_environ: Content-Type from the headers, the body's length, then every other header
    # under its WSGI name, repeated ones joined
    content_type = next((value for key, value in header_items if key.lower() == "content-type"), None)
    if content_type is not None:
        environ["CONTENT_TYPE"] = content_type
    if body:  # (the builder drops a Content-Length header: a bodiless request has none here)
        environ["CONTENT_LENGTH"] = str(len(body))
    combined: dict[str, list[str]] = defaultdict(list)
    for (key, value), low in zip(header_items, lowered):
        if low not in ("content-type", "content-length"):
            combined[f"HTTP_{key.upper().replace('-', '_')}"].append(value)
    for key, values in combined.items():
        environ[key] = ", ".join(values)
    return environ, header_items


#: expressions kept (a check sends a few texts, with a few thousand owners' values)
EXPRESSIONS = 16_384
#: URLs whose way to moto's method is kept (a check reads a few thousand objects)
ROUTES = 16_384
#: what moto's URL tables depend on (idem.sim.fastload caches them per value)
_URL_SETTINGS = ("MOTO_S3_CUSTOM_ENDPOINTS", "MOTO_ENABLE_ISO_REGIONS")
