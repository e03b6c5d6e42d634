"""The reconciliation's yearly cost (idem/cost/reconcile_cost.py), as the README states it."""
from __future__ import annotations

from pathlib import Path

from idem.cost.reconcile_cost import render, year

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_the_query_costs_far_less_than_a_scan_of_every_line_every_run():
    for n in (1000, 100_000):
        cost = year(n)
        (query,) = [usd for name, usd in cost.lines if name.startswith("Query of the day index")]
        assert query * 100 < cost.scan_instead


def test_past_the_listing_limit_the_uploads_come_from_s3_inventory():
    names = [name for name, usd in year(100_000).lines if usd > 0]
    assert "S3 Inventory, daily, all versions (363 days)" in names


def test_the_readme_states_the_model_s_totals():
    for n in (1000, 100_000):
        total = render(year(n))[-2].split("$")[-1].strip()
        assert f"${total}" in README, f"README does not state {n:,} orders a day: ${total}"
