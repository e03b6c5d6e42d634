"""The reconciliation and refunds (docs/money_contract.md, property 3): the charge a double's finding
tells a person to refund is one the ledger does not book; a refund made at Stripe outside `idem refund`
(in the Dashboard) that the ledger does not book is a finding whose command books it."""
from __future__ import annotations

from typing import Any

from idem.core.reconcile.compare import compare
from idem.core.reconcile.report import Entry

HOUR = 3600


def test_a_double_whose_booked_charge_is_older_than_the_windows_lines_keeps_the_one_its_record_books():
    """The line of the booked charge may be older than the lines the window reads (booked a day ago);
    the order's record names it (`result.charge_id`), read by key for that double only: of three charges
    the middle one is booked, so the first and the third are the ones to refund."""
    at = 1000.0
    charges = [Entry(f"pi_{n}", "alice", 500, at + n * 25 * HOUR, key="charge#order#k", status="succeeded")
               for n in (1, 2, 3)]
    asked: list[str] = []

    def status_of(key: str) -> tuple[str, dict[str, Any]]:
        asked.append(key)
        return "done", {"status": "charged", "charge_id": "pi_2"}

    start = (at + 3 * 25 * HOUR) // HOUR * HOUR
    report = compare([], charges, start, start + HOUR, status_of=status_of)
    doubles = [f for f in report.findings if f.kind == "double"]
    assert [(f.what, f.command.split()[-1]) for f in doubles] == [("pi_1", "pi_1"), ("pi_3", "pi_3")]
    assert all("kept: pi_2, booked" in f.detail for f in doubles)
    assert asked == ["charge#order#k"]


def test_a_double_with_no_booked_charge_keeps_the_first():
    at = 1000.0
    charges = [Entry(f"pi_{n}", "alice", 500, at + n * 25 * HOUR, key="charge#order#k", status="succeeded")
               for n in (1, 2)]
    start = (at + 2 * 25 * HOUR) // HOUR * HOUR
    report = compare([], charges, start, start + HOUR, status_of=lambda key: ("needs_attention", {}))
    doubles = [f for f in report.findings if f.kind == "double"]
    assert [f.what for f in doubles] == ["pi_2"] and "kept: pi_1, the first" in doubles[0].detail
