"""keyed's commit designs, metered side by side (idem.cost.commit_designs, chapter 08)."""
from __future__ import annotations

from idem.cost import commit_designs as cd


def test_each_design_is_pinned_by_the_rules():
    """Every item here is under 1 KB, so each write is 1 unit
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
    The transaction bills its three items twice (6) plus the claim (1)
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling);
    keyed's put bills 1, and its line enters the ledger table's two sparse indexes, 1 each
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):
    by_account (its totals) and by_day (booked_day, the reconciliation's); the scan design's
    table has no index. A duplicate is one failed conditional put in every design: 1 unit."""
    got = {d.design: (d.calls_first, d.wru_first, d.wru_duplicate) for d in cd.measure(lines=10)}
    assert got == {"transaction + counter": (2, 7, 1), "put + sparse index (keyed)": (2, 4, 1),
                   "put, totals by scan": (2, 2, 1)}


def test_a_scan_for_totals_costs_more_as_the_table_grows_and_the_index_query_less_so():
    scan = cd.DESIGNS[2]
    small, large = cd.measure_design(scan, lines=5), cd.measure_design(scan, lines=60)
    assert large.totals_rru > small.totals_rru
    index_small, index_large = (cd.measure_design(cd.DESIGNS[1], lines=n) for n in (5, 60))
    assert index_large.totals_rru < large.totals_rru and index_small.totals_rru <= index_large.totals_rru


def test_the_transaction_design_books_through_its_counter():
    cost = cd.measure_design(cd.DESIGNS[0], lines=3)
    assert cost.totals_by == "a counter item" and cost.totals_rru == 0.5  # one eventually consistent read
    assert cost.row()["$ per million uploads"] == 7 * 0.625
