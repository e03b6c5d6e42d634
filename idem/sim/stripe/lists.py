"""Lists and search, as Stripe pages and queries them (newest first; search with its lag)."""
from __future__ import annotations

import re
from typing import Any

from .errors import StripeError
from .objects import Objects, _public
from .params import _as_int, _limit


def _newest_first(item: dict[str, Any]) -> tuple[int, int]:
    """Lists and search results, newest first (https://docs.stripe.com/api/pagination)."""
    return (-item["created"], -item["_seq"])


def _page(url: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """A list page (https://docs.stripe.com/api/pagination): `starting_after` an id, `limit`."""
    limit = _limit(params)
    after = params.get("starting_after")
    if after:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1:] if after in ids else []
    return {"object": "list", "url": url, "has_more": len(items) > limit, "data": items[:limit]}


QUERY_CLAUSE = re.compile(r"""\s*(?:metadata\[(['"])(?P<key>[^'"]*)\1\]|(?P<field>[a-z_]+))
                              \s*(?P<op>:|>=|<=|>|<)\s*(?:(['"])(?P<text>[^'"]*)\5|(?P<number>-?\d+))\s*""", re.X)


def _parse_query(query: str) -> tuple[list[tuple[str, str, str]], str]:
    """Stripe's search query language (https://docs.stripe.com/search#search-query-language): clauses
    `field:value` (`metadata['key']:'value'`, `status:'succeeded'`, `created>=1700000000`), joined by
    AND or by OR ("you can't combine AND and OR in the same query"); at most 10 clauses."""
    parts = re.split(r"\s+(AND|OR)\s+", query.strip())
    joiners = set(parts[1::2])
    if not query.strip() or len(joiners) > 1:
        raise StripeError(400, "invalid_request_error", f"Invalid query: {query!r}", param="query")
    clauses = []
    for text in parts[0::2]:
        match = QUERY_CLAUSE.fullmatch(text)
        if not match:
            raise StripeError(400, "invalid_request_error", f"Invalid query clause: {text!r}", param="query")
        name = f"metadata.{match['key']}" if match["key"] is not None else match["field"]
        value = match["text"] if match["text"] is not None else match["number"]
        if name not in SEARCHABLE and not name.startswith("metadata."):
            raise StripeError(400, "invalid_request_error", f"Field {name!r} is not searchable on PaymentIntents.",
                              param="query")
        clauses.append((name, match["op"], value))
    if len(clauses) > 10:
        raise StripeError(400, "invalid_request_error", "A query has at most 10 clauses.", param="query")
    return clauses, (joiners.pop() if joiners else "AND")


#: PaymentIntent query fields (https://docs.stripe.com/search#query-fields-for-payment-intents).
SEARCHABLE = ("amount", "created", "currency", "customer", "status")


def _matches(intent: dict[str, Any], clause: tuple[str, str, str]) -> bool:
    name, op, value = clause
    actual = intent["metadata"].get(name[9:]) if name.startswith("metadata.") else intent.get(name)
    if actual is None:
        return False
    if op == ":":
        return str(actual) == value
    number = int(actual)
    return {">": number > int(value), "<": number < int(value), ">=": number >= int(value),
            "<=": number <= int(value)}[op]


def created_in(item: dict[str, Any], params: dict[str, Any]) -> bool:
    """A list's `created` filter: a timestamp, or a dict of gt/gte/lt/lte (PaymentIntents:
    https://docs.stripe.com/api/payment_intents/list; Refunds: https://docs.stripe.com/api/refunds/list,
    "created: Only return refunds that were created during the given date interval", as Stripe's SDK
    documents it in stripe.params.RefundListParams)."""
    created = params.get("created")
    bounds = created if isinstance(created, dict) else ({"eq": created} if created is not None else {})
    tests = {"gt": int.__gt__, "gte": int.__ge__, "lt": int.__lt__, "lte": int.__le__, "eq": int.__eq__}
    return all(tests[op](item["created"], _as_int(value, f"created[{op}]")) for op, value in bounds.items()
               if op in tests)


def listed(objects: Objects, params: dict[str, Any]) -> list[dict[str, Any]]:
    """https://docs.stripe.com/api/payment_intents/list: newest first; `created` as a timestamp
    or with gt/gte/lt/lte; `customer`."""
    found = [intent for intent in objects.intents.values()
             if params.get("customer") in (None, intent["customer"]) and created_in(intent, params)]
    return sorted(found, key=_newest_first)


def search(objects: Objects, params: dict[str, Any], now: float) -> dict[str, Any]:
    """https://docs.stripe.com/api/payment_intents/search and https://docs.stripe.com/search:
    clauses joined by AND (OR too, not mixed); "Don't use search for read-after-write flows ...
    Under normal operating conditions, data is searchable in under 1 minute. Propagation of new
    or updated data could be delayed during an outage"; the API reference adds "can be up to an
    hour behind during outages" (search_lag_seconds models the delay, for new PaymentIntents and
    for changes: search finds, and answers, the version it has indexed; retrieve and list are not
    delayed: "use the various list APIs ... These APIs aren't subject to the availability delay")."""
    query = str(params.get("query") or "")
    clauses, joiner = _parse_query(query)
    seen = [[version for since, version in versions if since <= now] for versions in objects.indexed.values()]
    found = [versions[-1] for versions in seen if versions
             and (all if joiner == "AND" else any)(_matches(versions[-1], c) for c in clauses)]
    found.sort(key=lambda i: _newest_first(objects.intents[i["id"]]))
    limit = _limit(params)
    start = int(params.get("page") or 0) if str(params.get("page") or "0").isdigit() else 0
    page = found[start:start + limit]
    more = start + limit < len(found)
    return {"object": "search_result", "url": "/v1/payment_intents/search", "has_more": more,
            "next_page": str(start + limit) if more else None, "data": [_public(i) for i in page]}
