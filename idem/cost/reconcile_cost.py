"""What the three-way reconciliation costs in a year, at a given number of orders a day.

DynamoDB by its own billing rules (idem/cost/capacity.py: item sizes, 1 KB write units, 4 KB read
units, eventually consistent index reads at half), on-demand prices (capacity.US_EAST_1), and S3
request prices (idem/deploy/prices.py). Assumptions are named beside each line; the window is an
hour (8,760 runs a year) and the lag prod's (idem/core/buffer.py: 27,900 s), so each line is read
by 1 + 27,900 / 3,600 runs (its own window's and the later ones whose widened read reaches it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.buffer import PROD
from ..core.reconcile.job import LOOKUP_THREADS, MAX_CLAUSES, MAX_LISTED_VERSIONS
from ..deploy.prices import PRICES
from .capacity import US_EAST_1, item_size, read_units, write_units

#: S3 Inventory: $0.0025 per million objects listed ([3rd] widely quoted, e.g. infracost's
#: s3_bucket_inventory.go prices "Objects listed" per 1M; aws.amazon.com/s3/pricing renders with a script).
INVENTORY_USD_PER_MILLION_OBJECTS = 0.0025
RUNS_PER_YEAR = 365 * 24
#: One entry of the day index, as keyed's commit writes it with ORDER_IDENTITY order-id (the
#: index's keys, then its projection in template.yaml: account, cents, charge_id, source; the
#: source names the order, `bucket#order#ORDER_ID`, keyed_orders.identify). Sizes by
#: capacity.item_size; under 1 KB, so one write unit.
INDEX_ENTRY = {"pk": {"S": "charge#order#" + "0" * 64}, "booked_day": {"S": "2026-11-06"},
               "booked_at": {"N": "1794441600.123456"}, "account": {"S": "cus_0123456789abcd"},
               "cents": {"N": "1250"}, "charge_id": {"S": "pi_3MtwBwLkdIwHu7ix28a3tqPa"},
               "source": {"S": "idem-prod-uploads-123456789012-eu-west-1#order#A-1001"}}
#: One booked line as the handler writes it (BRIEF decision 3: account, customer, currency, cents,
#: charge_id, first_attempt_at, payment_method), read whole by the GetItem of its customer and
#: currency (a projection bills the item's size): under 4 KB, half a read unit eventually consistent.
LINE_ITEM = {**INDEX_ENTRY, "status": {"S": "done"}, "owner": {"S": "0" * 36}, "customer": {"S": "cus_0123456789abcd"},
             "currency": {"S": "usd"}, "first_attempt_at": {"N": "1794441600.123456"},
             "payment_method": {"S": "pm_0123456789abcdefghijklmn"}, "created_at": {"N": "1794441600.123456"},
             "result": {"M": {"status": {"S": "charged"}, "charge_id": {"S": "pi_3MtwBwLkdIwHu7ix28a3tqPa"},
                              "amount_cents": {"N": "1250"}}}}
#: An account's customer mapping (`account#ACCOUNT`, BRIEF decision 2).
MAPPING_ITEM = {"pk": {"S": "account#alice"}, "kind": {"S": "customer"}, "account": {"S": "alice"},
                "customer": {"S": "cus_0123456789abcd"}, "linked_by": {"S": "arn:aws:iam::123456789012:user/ops"},
                "linked_at": {"N": "1794441600"}, "reason": {"S": "signed contract 2026-11"}}
#: A refund's booking (`refund#<pi>`, as `idem refund` and the webhook write it), read by a GetItem
#: projecting refunded_cents (a projection bills the item's size).
REFUND_ITEM = {"pk": {"S": "refund#pi_3MtwBwLkdIwHu7ix28a3tqPa"}, "status": {"S": "refunded"},
               "refund_id": {"S": "re_3MtwBwLkdIwHu7ix28a3tqPa"}, "refunded_cents": {"N": "1250"},
               "refunded_charge": {"S": "pi_3MtwBwLkdIwHu7ix28a3tqPa"}, "order_key": {"S": "charge#order#" + "0" * 64},
               "currency": {"S": "usd"}, "refunded_at": {"N": "1794441600.123456"}}
#: Assumed latencies of one call from the function (not measured here; they size the Lambda time
#: of the calls made per order): a DynamoDB GetItem, an S3 GetObject, a Stripe request.
SECONDS_PER_GETITEM, SECONDS_PER_GETOBJECT, SECONDS_PER_STRIPE_REQUEST = 0.005, 0.02, 0.3
#: ReconcileFunction's memory (template.yaml: MemorySize 256, arm64).
MEMORY_GB = 0.25
#: Assumed share of a day's orders refunded that day (not measured: a shop's own rate). It sizes the
#: refund reads (idem/core/reconcile/refunds.py): per refunded charge a GetItem of its `refund#<pi>`
#: and one Refunds list by its payment_intent (LOOKUP_THREADS at a time); the window's Refunds list,
#: 100 a page; a retrieve only for a difference (none counted). A window stays under RESERVE_MILLIS
#: up to about 8% (each refund adds ~0.08 s).
REFUNDED_SHARE = 0.02


def stripe_searches(orders_in_window: int) -> int:
    """The searches one window makes at Stripe (idem/core/reconcile/charges.py): the window's PaymentIntents,
    100 a page, then every charge of its orders, MAX_CLAUSES orders a search (each answered in
    one page: an order has one charge, or a few)."""
    return max(1, math.ceil(orders_in_window / 100)) + math.ceil(orders_in_window / MAX_CLAUSES)


def refunded_in(orders_in_window: int) -> int:
    """The charges refunded in one window, at REFUNDED_SHARE."""
    return math.ceil(orders_in_window * REFUNDED_SHARE)


def refund_lists(refunded: int) -> int:
    """The Refunds lists one window makes at Stripe: the window's refunds, 100 a page, then one per
    refunded charge (its refunds by payment_intent, each answered in one page)."""
    return max(1, math.ceil(refunded / 100)) + refunded


def window_seconds_on_calls(orders_in_window: int) -> float:
    """The Lambda time one window spends on the calls it makes per order, at the assumed
    latencies: each upload's GetObject, each line's GetItem and its account's mapping (at most
    one a line), the searches (the look-ups LOOKUP_THREADS at a time), and the refunds (each
    refunded charge's GetItem, its list LOOKUP_THREADS at a time)."""
    lookups = math.ceil(orders_in_window / MAX_CLAUSES)
    refunded = refunded_in(orders_in_window)
    return (orders_in_window * (SECONDS_PER_GETOBJECT + 2 * SECONDS_PER_GETITEM)
            + (stripe_searches(orders_in_window) - lookups) * SECONDS_PER_STRIPE_REQUEST
            + math.ceil(lookups / LOOKUP_THREADS) * SECONDS_PER_STRIPE_REQUEST
            + refunded * SECONDS_PER_GETITEM
            + (refund_lists(refunded) - refunded) * SECONDS_PER_STRIPE_REQUEST
            + math.ceil(refunded / LOOKUP_THREADS) * SECONDS_PER_STRIPE_REQUEST)


#: The old design's Scan of the by_account index: its entries (pk, account, booked_at, cents, charge_id).
SCANNED_ENTRY = {k: v for k, v in INDEX_ENTRY.items() if k in ("pk", "account", "booked_at", "cents", "charge_id")}


@dataclass(frozen=True)
class YearCost:
    orders_per_day: int
    lines: list[tuple[str, float]]
    scan_instead: float  # what the old Scan of every line every run would cost in the same year

    @property
    def total(self) -> float:
        return sum(usd for _, usd in self.lines)


def year(orders_per_day: int, lag_seconds: int = PROD.reconcile_lag_seconds, window_seconds: int = 3600) -> YearCost:
    """The reconciliation's cost over a year of `orders_per_day`, line by line (US dollars)."""
    orders = orders_per_day * 365
    entry = item_size(INDEX_ENTRY)
    reads_per_line = 1 + lag_seconds / window_seconds
    per_window = orders_per_day * (window_seconds + lag_seconds) / 86400  # lines one Query reads
    query_rru = read_units(int(per_window * entry), consistent=False) * RUNS_PER_YEAR
    lines = [
        (f"day index: one more write per line ({write_units(entry)} WRU, {entry} B)",
         orders * write_units(entry) * US_EAST_1.usd_per_million_wru / 1e6),
        (f"Query of the day index ({reads_per_line:.2f} reads of each line, eventually consistent)",
         query_rru * US_EAST_1.usd_per_million_rru / 1e6),
        ("cursor: GetItem + UpdateItem a run",
         RUNS_PER_YEAR * (0.5 * US_EAST_1.usd_per_million_rru + 1 * US_EAST_1.usd_per_million_wru) / 1e6),
        ("GetObject of each upload's order_id", orders / 1000 * PRICES["s3_get"].usd),
        ("GetItem of each booked line (its customer and currency)",
         orders * read_units(item_size(LINE_ITEM), consistent=False) * US_EAST_1.usd_per_million_rru / 1e6),
        ("GetItem of each line's account's customer mapping (at most one a line)",
         orders * read_units(item_size(MAPPING_ITEM), consistent=False) * US_EAST_1.usd_per_million_rru / 1e6),
    ]
    in_window = math.ceil(orders_per_day * window_seconds / 86400)
    windows = RUNS_PER_YEAR
    lines.append((f"GetItem of each refunded charge's refund#<pi> (assumed {REFUNDED_SHARE:.0%} of orders)",
                  windows * refunded_in(in_window) * read_units(item_size(REFUND_ITEM), consistent=False)
                  * US_EAST_1.usd_per_million_rru / 1e6))
    # Stripe bills per successful transaction, "No setup fees, monthly fees, or hidden fees"
    # (https://stripe.com/pricing): its searches cost the function's time, not a fee.
    lines.append((f"Stripe: {stripe_searches(in_window) * windows // 365:,} searches and "
                  f"{refund_lists(refunded_in(in_window)) * windows // 365:,} refund lists a day (no fee; "
                  "the Lambda time below)", 0.0))
    lines.append((f"Lambda time on those calls ({window_seconds_on_calls(in_window):.0f} s a window, "
                  "assumed latencies)",
                  windows * window_seconds_on_calls(in_window) * MEMORY_GB * PRICES["lambda_gb_second"].usd))
    # The bucket grows all year (each order keeps its current version): listed every run while it
    # holds at most MAX_LISTED_VERSIONS, read from a daily S3 Inventory after.
    listing = inventory = 0.0
    for day in range(1, 366):
        versions = orders_per_day * day
        if versions <= MAX_LISTED_VERSIONS:
            listing += 24 * math.ceil(versions / 1000) / 1000 * PRICES["s3_put"].usd  # LIST bills as PUT
        else:
            inventory += versions / 1e6 * INVENTORY_USD_PER_MILLION_OBJECTS
    listed_days = min(365, MAX_LISTED_VERSIONS // orders_per_day)
    lines.append((f"ListObjectVersions every run ({listed_days} days)", listing))
    lines.append((f"S3 Inventory, daily, all versions ({365 - listed_days} days)", inventory))
    scanned = item_size(SCANNED_ENTRY)
    scan_rru = sum(read_units(int(orders_per_day * day * scanned), consistent=False) * 24 for day in range(1, 366))
    return YearCost(orders_per_day, lines, scan_rru * US_EAST_1.usd_per_million_rru / 1e6)


def render(cost: YearCost) -> list[str]:
    width = max(len(name) for name, _ in cost.lines)
    rows = [f"{name:<{width}}  ${usd:9.2f}" for name, usd in cost.lines]
    return ([f"{cost.orders_per_day:,} orders a day for a year"] + rows
            + [f"{'total':<{width}}  ${cost.total:9.2f}",
               f"{'(a Scan of the ledger every run instead)':<{width}}  ${cost.scan_instead:9.2f}"])
