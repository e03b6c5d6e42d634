"""The reconciliation's provider side: this stack's charges, from Stripe (stdlib HTTPS, so the
function ships stdlib + boto3 only) or from the demo's stand-in provider table.

From Stripe, per window: the PaymentIntents created in it (one search, paged); every charge ever
made for each order seen in it (`order_charges`: searches by the order's key, ten orders a
search), so two charges of one order are found however far apart; and a line's charge by its id
when it was made before the window (`retrieve_charge`: a line booked today for an older charge)."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping

from ..dynamo import from_item, values
from .report import Entry

#: Stripe's search of PaymentIntents. Query language: clauses `field:value` joined by AND or by
#: OR ("You can't combine AND and OR in the same query"; at most 10 clauses), metadata as
#: `metadata['key']:'value'`, numbers compared with `>=` `<`; `created` is a query field of
#: PaymentIntents (https://docs.stripe.com/search#search-query-language). `limit` at most 100,
#: `page` the `next_page` of the previous answer. Search lags writes: "Under normal operating
#: conditions, data is searchable in under 1 minute" (https://docs.stripe.com/search#data-freshness),
#: "Occasionally, propagation of new or updated data can be up to an hour behind during outages"
#: (https://docs.stripe.com/api/payment_intents/search): a window is judged LAG (always more than
#: an hour) after it closes, so every charge made in it or before it is searchable by then.
#: Search allows 20 read requests a second (https://docs.stripe.com/rate-limits).
STRIPE_API = "https://api.stripe.com"
#: The most clauses one search may join (https://docs.stripe.com/search#search-query-language).
MAX_CLAUSES = 10
#: Searches started a second, at most: under Search's 20 (https://docs.stripe.com/rate-limits),
#: leaving room for the charge function's own searches past its key window.
SEARCHES_PER_SECOND = 16
#: Order look-ups in flight at once (a search takes a few hundred ms, so one at a time would spend
#: most of a run waiting: 100,000 orders a day are ~420 look-ups a window).
LOOKUP_THREADS = 4


class Pace:
    """At most `per_second` calls begun a second, across threads (each caller waits its turn)."""

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.gap, self.clock, self.sleep = 1.0 / per_second, clock, sleep
        self.next = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        with self.lock:
            now = self.clock()
            turn = max(now, self.next)
            self.next = turn + self.gap
        if turn > now:
            self.sleep(turn - now)


#: One pace for the whole function (a warm container's runs share it).
SEARCH_PACE = Pace(SEARCHES_PER_SECOND)
#: PaymentIntent statuses in which money moved or will
#: (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status).
CHARGED = ("succeeded", "processing", "requires_capture")


def standin_charges(dynamodb: Any, table: str, start: float, end: float) -> list[Entry]:
    """The workbook's stand-in provider (the demo's own table, one per stack): charges created
    in [start, end). Its charges all succeeded (it has no `processing`)."""
    found = []
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table, ConsistentRead=True,
        FilterExpression="#k = :charge AND #c >= :start AND #c < :end",
        ExpressionAttributeNames={"#k": "kind", "#c": "created_at"},
        ExpressionAttributeValues=values(charge="charge", start=start, end=end))
    for page in pages:
        for item in map(from_item, page["Items"]):
            assert item is not None
            metadata: Mapping[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
            found.append(Entry(str(item["pk"]).removeprefix("charge#"), str(metadata.get("idem_account") or item["customer"]),
                               int(item["amount"]), float(item["created_at"]),
                               str(item.get("idempotency_key") or ""),
                               _order_of(metadata) or str(item.get("reference") or ""),
                               customer=str(item["customer"]), currency=str(item.get("currency") or "").lower(),
                               status="succeeded"))
    return found


Fetch = Callable[[urllib.request.Request], Mapping[str, Any]]


def _fetch_json(request: urllib.request.Request) -> Mapping[str, Any]:
    with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310 (https, fixed host)
        page: Mapping[str, Any] = json.load(answer)
        return page


def _quoted(value: str) -> str:
    """A value in a search clause: a quote inside it is escaped with a backslash
    (https://docs.stripe.com/search#search-query-language)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def stripe_query(stack: str, start: float, end: float) -> str:
    """The search for this stack's PaymentIntents created in [start, end)."""
    return f"metadata['idem_stack']:{_quoted(stack)} AND created>={int(start)} AND created<{int(end)}"


def orders_query(keys: Iterable[str]) -> str:
    """The search for every PaymentIntent made under any of these order keys (at most
    MAX_CLAUSES), whenever: the handler writes the order's key in `metadata['idempotency_key']`
    on every charge of the order, the retry after Stripe forgot the key included."""
    return " OR ".join(f"metadata['idempotency_key']:{_quoted(key)}" for key in keys)


def _request(api: str, path: str, secret_key: str, query: Mapping[str, str] | None = None) -> urllib.request.Request:
    url = f"{api}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    # the secret key as a Bearer token: https://docs.stripe.com/api/authentication
    return urllib.request.Request(url, headers={"Authorization": f"Bearer {secret_key}"})


def _search(secret_key: str, query: str, stack: str, fetch: Fetch, api: str) -> list[Entry]:
    """Every page of one search: this stack's PaymentIntents in which money moved."""
    found: list[Entry] = []
    page_token = ""
    while True:
        params = {"query": query, "limit": "100", **({"page": page_token} if page_token else {})}
        SEARCH_PACE.wait()
        page = fetch(_request(api, "/v1/payment_intents/search", secret_key, params))
        for intent in page.get("data", []):
            if intent.get("status") in CHARGED and (intent.get("metadata") or {}).get("idem_stack") == stack:
                found.append(entry_of(intent))
        page_token = str(page.get("next_page") or "")
        if not page.get("has_more"):
            return found
        if not page_token:  # the rest cannot be read: judge the window on all of it or not at all
            raise RuntimeError("Stripe's search answered has_more with no next_page: the window is not judged")


def stripe_charges(secret_key: str, stack: str, start: float, end: float, fetch: Fetch = _fetch_json,
                   api: str = STRIPE_API) -> list[Entry]:
    """This stack's PaymentIntents created in [start, end) in which money moved, every page, by
    the id the handler books (`pi_...`)."""
    if not stack:
        raise ValueError("no stack name: the search must be narrowed to this stack's charges "
                         "(metadata idem_stack); set STACK_NAME")
    return _search(secret_key, stripe_query(stack, start, end), stack, fetch, api)


def order_charges(secret_key: str, stack: str, seen: Iterable[Entry], fetch: Fetch = _fetch_json,
                  api: str = STRIPE_API) -> list[Entry]:
    """Every charge of this stack ever made for the orders of `seen`, charges or lines (by each
    one's order key;
    a charge with no key in its metadata is no charge of the handler's and is looked up by
    nothing): ceil(orders / MAX_CLAUSES) searches, each paged, LOOKUP_THREADS at a time, paced."""
    keys = sorted({entry.key for entry in seen if entry.key})
    queries = [orders_query(keys[n:n + MAX_CLAUSES]) for n in range(0, len(keys), MAX_CLAUSES)]
    with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:  # answers in the queries' order
        pages = list(pool.map(lambda query: _search(secret_key, query, stack, fetch, api), queries))
    return [entry for page in pages for entry in page]


def retrieve_charge(secret_key: str, charge_id: str, fetch: Fetch = _fetch_json,
                    api: str = STRIPE_API) -> Entry | None:
    """One PaymentIntent by its id (a line's charge made before the window), or None when
    Stripe has none by that id (404) or the id is no PaymentIntent's. Retrieve is not subject to
    search's delay (https://docs.stripe.com/search#data-freshness)."""
    if not charge_id.startswith("pi_"):
        return None
    try:
        intent = fetch(_request(api, f"/v1/payment_intents/{urllib.parse.quote(charge_id, safe='')}", secret_key))
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    return entry_of(intent)


def account_of(metadata: Mapping[str, Any], customer: str) -> str:
    """The account a PaymentIntent was charged for: its metadata `idem_account` (the uploader's
    folder, keyed_orders), else, on older charges, `account`, else its customer. Never `account`
    first: the handler writes the Stripe customer there (keyed_stripe)."""
    return str(metadata.get("idem_account") or metadata.get("account") or customer)


def entry_of(intent: Mapping[str, Any]) -> Entry:
    """A PaymentIntent as the reconciliation sees it: the account is its metadata `idem_account`
    (older charges: `account`, else the customer), the amount what it received, the key its
    metadata `idempotency_key`."""
    metadata = intent.get("metadata") or {}
    customer = str(intent.get("customer") or "")
    account = account_of(metadata, customer)
    cents = intent.get("amount_received") or intent["amount"]
    return Entry(str(intent["id"]), str(account), int(cents), float(intent["created"]),
                 str(metadata.get("idempotency_key") or ""),
                 _order_of(metadata) or str(metadata.get("reference") or ""),
                 customer=customer, currency=str(intent.get("currency") or "").lower(),
                 status=str(intent.get("status") or ""))


def _order_of(metadata: Mapping[str, Any]) -> str:
    """The order a charge's metadata names, or "": its account (BRIEF decision 3: two accounts'
    order "1001" are two orders) and order_id; an older charge without `idem_account`, its
    bucket and order_id (docs/one_charge_per_order.md). `%` and `#` in the names are escaped (%25, %23): account
    `a#order=1`'s order `2` and account `a`'s order `1#order=2` are two orders, never one label."""
    if not metadata.get("order_id"):
        return ""
    order = _escaped(str(metadata["order_id"]))
    if metadata.get("idem_account"):
        return f"s3://{metadata.get('bucket', '')}/{_escaped(str(metadata['idem_account']))}#order={order}"
    return f"s3://{metadata.get('bucket', '')}#order={order}"


def _escaped(name: str) -> str:
    return name.replace("%", "%25").replace("#", "%23")
