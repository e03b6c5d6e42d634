"""The reconciliation's provider side: this stack's charges, from Stripe's search (stdlib HTTPS,
so the function ships stdlib + boto3 only) or from the demo's stand-in provider table."""
from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any, Callable, Mapping

from .dynamo import from_item, values
from .reconcile_report import Entry

#: Stripe's search of PaymentIntents. Query language: clauses `field:value` joined by AND,
#: metadata as `metadata['key']:'value'`, numbers compared with `>=` `<`; `created` is a query
#: field of PaymentIntents (https://docs.stripe.com/search#search-query-language). `limit` at most
#: 100, `page` the `next_page` of the previous answer. Search lags writes: "Occasionally,
#: propagation of new or updated data can be up to an hour behind during outages"
#: (https://docs.stripe.com/api/payment_intents/search): LAG is always more than an hour.
STRIPE_API = "https://api.stripe.com"
#: PaymentIntent statuses in which money moved or will
#: (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status).
CHARGED = ("succeeded", "processing", "requires_capture")


def standin_charges(dynamodb: Any, table: str, start: float, end: float) -> list[Entry]:
    """The workbook's stand-in provider (the demo's own table, one per stack): charges created
    in [start, end)."""
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
            found.append(Entry(str(item["pk"]).removeprefix("charge#"), str(item["customer"]),
                               int(item["amount"]), float(item["created_at"]),
                               str(item.get("idempotency_key") or ""),
                               _order_of(metadata) or str(item.get("reference") or "")))
    return found


Fetch = Callable[[urllib.request.Request], Mapping[str, Any]]


def _fetch_json(request: urllib.request.Request) -> Mapping[str, Any]:
    with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310 (https, fixed host)
        page: Mapping[str, Any] = json.load(answer)
        return page


def stripe_query(stack: str, start: float, end: float) -> str:
    """The search for this stack's PaymentIntents created in [start, end). A quote inside a value
    is escaped with a backslash (https://docs.stripe.com/search#search-query-language)."""
    name = stack.replace("\\", "\\\\").replace("'", "\\'")
    return f"metadata['idem_stack']:'{name}' AND created>={int(start)} AND created<{int(end)}"


def stripe_charges(secret_key: str, stack: str, start: float, end: float, fetch: Fetch = _fetch_json,
                   api: str = STRIPE_API) -> list[Entry]:
    """This stack's PaymentIntents created in [start, end) in which money moved, every page, by
    the id the handler books (`pi_...`). The account is the intent's metadata `account`, else its
    customer; the amount is what it received; the key is its metadata `idempotency_key`."""
    if not stack:
        raise ValueError("no stack name: the search must be narrowed to this stack's charges "
                         "(metadata idem_stack); set STACK_NAME")
    found: list[Entry] = []
    page_token = ""
    while True:
        query = {"query": stripe_query(stack, start, end), "limit": "100"}
        if page_token:
            query["page"] = page_token
        request = urllib.request.Request(f"{api}/v1/payment_intents/search?{urllib.parse.urlencode(query)}",
                                         # the secret key as a Bearer token: https://docs.stripe.com/api/authentication
                                         headers={"Authorization": f"Bearer {secret_key}"})
        page = fetch(request)
        for intent in page.get("data", []):
            metadata = intent.get("metadata") or {}
            if intent.get("status") in CHARGED and metadata.get("idem_stack") == stack:
                account = metadata.get("account") or intent.get("customer") or ""
                cents = intent.get("amount_received") or intent["amount"]
                found.append(Entry(intent["id"], str(account), int(cents), float(intent["created"]),
                                   str(metadata.get("idempotency_key") or ""),
                                   _order_of(metadata) or str(metadata.get("reference") or "")))
        page_token = str(page.get("next_page") or "")
        if not page.get("has_more") or not page_token:
            return found


def _order_of(metadata: Mapping[str, Any]) -> str:
    """The order a charge's metadata names (ORDERS.md: bucket and order_id), or ""."""
    if metadata.get("order_id"):
        return f"s3://{metadata.get('bucket', '')}#order={metadata['order_id']}"
    return ""

