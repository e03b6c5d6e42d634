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


def test_the_model_counts_the_calls_a_window_makes_per_order():
    """The cost lines per order are the job's own calls: a window of 23 orders, each of its own
    account, booked, on the loopback Stripe: its searches are `stripe_searches(23)` (one page of
    the window's charges, three look-ups of ten orders), and its GetItems two a line (the line's
    customer and currency, its account's mapping)."""
    from test_reconcile_per_order import stripe_stack

    from idem.cost.reconcile_cost import stripe_searches
    from idem.sim.world import fake_session

    with stripe_stack() as stack:
        for n in range(23):
            method = stack.customer(f"cus_a{n}")
            stack.link(f"a{n}", f"cus_a{n}")
            stack.book(f"a{n}", f"O-{n}", stack.charge(f"a{n}", f"O-{n}", f"cus_a{n}", method), customer=f"cus_a{n}")
        session = fake_session()
        gets: list[str] = []
        session.events.register("before-parameter-build.dynamodb.GetItem",
                                lambda params, **_: gets.append(params["Key"]["pk"]["S"]))
        before = len(stack.server.requests)
        report = stack.run(session)
        searched = [path for _, path in stack.server.requests[before:] if path == "/v1/payment_intents/search"]
        assert (report.differences, report.ledger_lines, report.provider_charges) == (0, 23, 23)
        assert len(searched) == stripe_searches(23) == 4
        assert sorted(gets) == sorted([f"account#a{n}" for n in range(23)]
                                      + [f"charge#order#a{n}#O-{n}" for n in range(23)])


def test_a_run_begins_no_window_it_could_not_finish_at_100000_orders_a_day():
    import math

    from idem.core.reconcile import job as reconcile_job
    from idem.cost.reconcile_cost import window_seconds_on_calls

    seconds = window_seconds_on_calls(math.ceil(100_000 / 24))
    assert seconds * 1000 < reconcile_job.RESERVE_MILLIS < 300_000  # ReconcileFunction's Timeout: 300 s
