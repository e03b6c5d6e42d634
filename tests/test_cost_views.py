"""idem.views.cost: chapter 08's bill table and chart, and the meter's small experiments."""
from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from idem import views  # noqa: E402
from idem.cost.bill import Bill  # noqa: E402
from idem.sim.world import LocalWorld  # noqa: E402
from idem.views import cost  # noqa: E402

BILLS = [Bill("naive", "first", 1, 1, 0), Bill("naive", "duplicate", 1, 1, 0),
         Bill("naive", "retry", 1, 1, 0), Bill("keyed", "first", 2, 3, 0),
         Bill("keyed", "duplicate", 1, 1, 0), Bill("keyed", "retry", 4, 5, 2)]


def test_the_package_reexports_the_cost_views():
    for name, value in vars(cost).items():
        if not name.startswith("_") and getattr(value, "__module__", None) == cost.__name__:
            assert getattr(views, name) is value, f"views.{name} is not cost.{name}"


def test_units_table_keeps_the_handlers_order_and_the_cases_order():
    table = cost.units_table(reversed(BILLS))
    assert list(table.index) == ["keyed", "naive"]
    assert list(table.columns) == ["first", "duplicate", "retry"]
    assert table.loc["keyed", "retry"] == 5
    assert cost.units_table(BILLS, "rru").loc["keyed", "retry"] == 2


def test_bill_frame_names_what_each_column_counts():
    frame = cost.bill_frame(BILLS)
    assert list(frame.columns) == ["handler", "case", "DynamoDB calls", "write units", "read units",
                                   "USD per million uploads"]
    assert frame.iloc[-1]["USD per million uploads"] == pytest.approx(5 * 0.625 + 2 * 0.125)


def test_bill_summary_holds_the_bill_frame_one_row_per_handler():
    table = cost.bill_summary(BILLS)
    assert list(table.index) == ["naive", "keyed"]
    assert list(table.columns) == [cost.CASE_LABELS[c] for c in ("first", "duplicate", "retry")]
    assert table.loc["keyed", cost.CASE_LABELS["retry"]] == "4 calls, 5 W + 2 R, $3.375"
    assert table.loc["naive", cost.CASE_LABELS["first"]] == "1 call, 1 W + 0 R, $0.625"


def test_the_chart_has_a_legend_entry_for_every_colour():
    fig = cost.bill_chart(BILLS)
    labels = [text.get_text() for legend in fig.legends for text in legend.get_texts()]
    assert labels == [cost.CASE_LABELS[c] for c in ("first", "duplicate", "retry")]
    bars = [patch for ax in fig.axes for patch in ax.patches]
    assert len(bars) == 2 * len(BILLS)  # write units and read units, a bar per handler and case
    assert {matplotlib.colors.to_hex(bar.get_facecolor()) for bar in bars} == set(cost.CASE_COLOURS.values())


def test_the_price_note_names_region_date_and_page():
    note = cost.price_note()
    assert "us-east-1" in note and "2026-10-04" in note and note.endswith("/on-demand/)")


def test_sized_items_have_exactly_the_size_asked_for():
    from idem.cost.capacity import item_size

    assert item_size(cost.sized_item("order#a", 2560)) == 2560
    with pytest.raises(ValueError, match="too small"):
        cost.sized_item("order#a", 5)


def test_the_meter_bills_the_three_examples_by_dynamodbs_rules():
    with LocalWorld(prefix="costview") as world:
        measured = cost.meter_examples(world.dynamodb)
        assert "meter-scratch" not in world.dynamodb.list_tables()["TableNames"]
    # 2.5 KB rounds up to 3; the failed put bills the item it would have replaced; two 600-byte
    # items round to 1 KB each and bill twice in a transaction
    assert measured == dict(zip(cost.EXAMPLES, (3.0, 3.0, 4.0)))


def test_a_first_delivery_is_itemised_request_by_request():
    parts = cost.itemise_designs()
    by = {(row["commit design"], row["part"]): row["write units"] for _, row in parts.iterrows()}
    # before: the claim, then a transaction of three small items, each billed twice
    assert by[("transaction + counter", "claim")] == 1
    assert by[("transaction + counter", "commit")] == 6
    assert by[("transaction + counter", "index entry")] == 0
    # now: the claim, one owner-fenced put of the ledger line, and its entries in the two sparse
    # indexes (by_account and the reconciliation's by_day: the line carries account and booked_day)
    assert [by[("put + sparse index (keyed)", p)] for p in cost.PART_COLOURS] == [1, 1, 2]
    assert cost.receipt_lines(parts)[1].endswith("= 4 write units")
    assert "TransactWriteItems of 3 items" in cost.receipt_lines(parts)[0]


def test_the_designs_chart_has_a_legend_entry_for_every_part():
    parts = cost.itemise_designs()
    fig = cost.designs_chart(parts)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(cost.PART_COLOURS)
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    assert colours == set(cost.PART_COLOURS.values())


def test_the_designs_frame_puts_a_design_in_each_column():
    from idem.cost.commit_designs import DesignCost

    costs = [DesignCost("a", 2, 7.0, 1.0, 0.5, 40, "a counter item"),
             DesignCost("b", 2, 3.0, 1.0, 0.5, 40, "a query on the index")]
    frame = cost.designs_frame(costs)
    assert list(frame.columns) == ["a", "b"]
    assert frame.loc["write units, first delivery", "b"] == 3.0
    assert "read units for those totals (40 lines)" in frame.index
