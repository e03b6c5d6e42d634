"""The reconciliation's refunds: money Stripe gave back that the ledger does not book.

A refund does not change its PaymentIntent's `amount_received` (what charges.py reads), so a charge
refunded in Stripe's Dashboard, not through `idem refund`, would leave its line booked at the full
amount and be reported by nothing. Per window: the refunds Stripe created in it (its Refunds list,
by `created`: https://docs.stripe.com/api/refunds/list), grouped by the PaymentIntent each refunds;
for each, what the ledger books refunded (`refund#<pi>`'s `refunded_cents`, written by `idem refund`
and by the webhook's charge.refunded) and what Stripe has refunded of it in all (its refunds, by
`payment_intent`). Less booked than refunded, on a PaymentIntent of this stack, is a `refund`
finding: `idem refund --charge pi_...` books what Stripe refunded (it never refunds more while the
ledger books less than Stripe refunded).
"""
from __future__ import annotations

import urllib.error
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping

from ..dynamo import from_item, to_item
from .charges import LOOKUP_THREADS, STRIPE_API, Fetch, _fetch_json, _request
from .report import Finding

#: Refund statuses in which money moved or will: `pending` and `succeeded`, not `requires_action`,
#: `failed` or `canceled` (https://docs.stripe.com/api/refunds/object#refund_object-status); the
#: runbook counts the same (runbook.StripeApi.refunded).
MOVED = ("succeeded", "pending")


def _list(secret_key: str, params: Mapping[str, str], fetch: Fetch, api: str) -> list[Mapping[str, Any]]:
    """Every page of one Refunds list: `limit` at most 100, the next page `starting_after` the
    last id of this one, while `has_more` (https://docs.stripe.com/api/pagination)."""
    found: list[Mapping[str, Any]] = []
    after = ""
    while True:
        query = {**params, "limit": "100", **({"starting_after": after} if after else {})}
        page = fetch(_request(api, "/v1/refunds", secret_key, query))
        data = list(page.get("data", []))
        found += data
        if not page.get("has_more") or not data:
            return found
        after = str(data[-1]["id"])


def window_refunds(secret_key: str, start: float, end: float, fetch: Fetch = _fetch_json,
                   api: str = STRIPE_API) -> list[Mapping[str, Any]]:
    """The refunds created in [start, end) that moved or will move money (Refunds list by
    `created[gte]` and `created[lt]`: https://docs.stripe.com/api/refunds/list). The list is not
    search: it is not subject to search's delay (https://docs.stripe.com/search#data-freshness)."""
    query = {"created[gte]": str(int(start)), "created[lt]": str(int(end))}
    return [r for r in _list(secret_key, query, fetch, api) if r.get("status") in MOVED and r.get("payment_intent")]


def refunded_of(secret_key: str, intent_id: str, fetch: Fetch = _fetch_json, api: str = STRIPE_API) -> int:
    """Cents Stripe has refunded of one PaymentIntent, in all (its refunds, by `payment_intent`)."""
    refunds = _list(secret_key, {"payment_intent": intent_id}, fetch, api)
    return sum(int(r.get("amount") or 0) for r in refunds if r.get("status") in MOVED)


def intent_of(secret_key: str, intent_id: str, fetch: Fetch = _fetch_json,
              api: str = STRIPE_API) -> Mapping[str, Any] | None:
    """One PaymentIntent by its id, or None (404)."""
    try:
        return fetch(_request(api, f"/v1/payment_intents/{urllib.parse.quote(intent_id, safe='')}", secret_key))
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def booked_refunds(dynamodb: Any, table: str, intents: Iterable[str]) -> dict[str, int]:
    """What the ledger books refunded of each PaymentIntent (`refund#<pi>`'s `refunded_cents`; 0
    when there is no such item): one GetItem each, eventually consistent (the window closed hours ago)."""
    booked = {}
    for intent in sorted(set(intents)):
        item = from_item(dynamodb.get_item(TableName=table, Key=to_item({"pk": f"refund#{intent}"}),
                                           ProjectionExpression="refunded_cents").get("Item")) or {}
        booked[intent] = int(item.get("refunded_cents") or 0)
    return booked


def unreadable(error: urllib.error.HTTPError) -> Finding:
    """The window's refunds could not be read: a restricted key without Refunds: Read is answered
    403 ("The API key doesn't have permissions to perform the request": https://docs.stripe.com/api/errors;
    per-resource permissions: https://docs.stripe.com/keys#limit-access). One finding, so the
    Differences alarm fires and the rest of the window's report stands."""
    return Finding("refund", "refunds", "", f"Stripe answered {error.code} to the Refunds list: refunds made "
                   "outside idem refund are not checked in this window",
                   "give the stack's Stripe key Refunds: Read (README, restricted keys), then rerun this window")


def refund_findings(refunds: Iterable[Mapping[str, Any]], booked: Callable[[Iterable[str]], Mapping[str, int]],
                    refunded: Callable[[str], int], intent: Callable[[str], Mapping[str, Any] | None],
                    stack: str, refund: str = "python -m idem refund") -> list[Finding]:
    """A `refund` finding per PaymentIntent of this stack refunded in the window whose refunds
    Stripe made exceed what the ledger books: `booked` (the ledger, by GetItem), `refunded` (Stripe's
    total, one list call each, LOOKUP_THREADS at a time), then `intent` (one retrieve, only for a
    difference: is it this stack's charge?)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for r in sorted(refunds, key=lambda r: (int(r.get("created") or 0), str(r["id"]))):
        latest[str(r["payment_intent"])] = r
    if not latest:
        return []
    on_books = booked(latest)
    with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:
        totals = dict(zip(sorted(latest), pool.map(refunded, sorted(latest))))
    found = []
    for pi in sorted(latest):
        if totals[pi] <= on_books.get(pi, 0):
            continue  # booked: by `idem refund` or by the webhook (charge.refunded)
        charge = intent(pi)
        metadata = (charge or {}).get("metadata") or {}
        if charge is None or metadata.get("idem_stack") != stack:
            continue  # not a charge of this stack
        last = latest[pi]
        currency = str(charge.get("currency") or last.get("currency") or "")
        received = int(charge.get("amount_received") or charge.get("amount") or 0)
        found.append(Finding(
            "refund", pi, str(metadata.get("idempotency_key") or ""),
            f"Stripe refunded {totals[pi]} of {received} {currency} (latest {last['id']}"
            f"{', made outside idem refund' if (last.get('metadata') or {}).get('idem_stack') != stack else ''}); "
            f"the ledger books {on_books.get(pi, 0)} refunded: confirm it was meant, then book it",
            f"{refund} --charge {pi}"))
    return found
