"""The adversary's seventh round, the books: a handler whose ledger line is written under a condition
that can never hold, and which reads the refusal as "another copy booked it", books no line for any
charge. The check found no line on the clean run and said "books: NOT judged", then "holds": a charge
with no ledger line, answered with a pass. A line sent to the books' table and refused by its condition
on the clean run (no fault, one delivery: nothing else writes there) is now that clean run's break, as
a line refused as invalid already was (idem.explore.check.clean_run)."""
from __future__ import annotations

import json

import pytest

from check_cli import cli, target


@pytest.mark.parametrize("name", ["books_fence_never_true", "legacy_fence_wrong_value"])
def test_a_line_refused_by_its_own_condition_on_the_clean_run_breaks(monkeypatch, name):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "uploads")
    code, out, _ = cli(target(name), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1 and report["books_judged"] is True
    (clean,) = report["results"]
    assert clean["verdict"] == "silent_mismatch"
    assert clean["findings"][0].startswith("the clean run charged and booked no ledger line: DynamoDB refused "
                                           "the line it sent to LEDGER_TABLE (dynamodb:UpdateItem: ")
    assert clean["findings"][0].endswith("its condition failed) and the handler went on; on a clean run "
                                         "nothing else writes there, so no attempt books it")


def test_its_twin_whose_condition_holds_is_judged_and_holds(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "uploads")
    code, out, _ = cli(target("legacy_fence_right_value"), "--retries", "0", "--workers", "1", "--json")
    report = json.loads(out)
    assert (code, report["books_judged"]) == (0, True)


def test_a_charge_refunded_in_full_kept_no_money_and_one_refunded_in_part_kept_the_rest():
    from types import SimpleNamespace

    from idem.explore.run.runner import kept_charges

    refunds = {"test": [{"payment_intent": "pi_000001", "amount": 1250, "status": "succeeded"},
                        {"payment_intent": "pi_000002", "amount": 250, "status": "succeeded"},
                        {"payment_intent": "pi_000003", "amount": 1250, "status": "failed"}]}
    server = SimpleNamespace(account=SimpleNamespace(modes=refunds, refunds=lambda mode: refunds[mode]))
    made = [(f"memory:charge#ch_00000{n}", {"pk": f"charge#ch_00000{n}", "amount": 1250}) for n in (1, 2, 3, 4)]
    made.append(("memory:charge#ch_000005", {"pk": "charge#ch_000005", "amount": 1250, "failed": True}))
    assert [(where[-9:], item["amount"]) for where, item in kept_charges(made, server)] == [
        ("ch_000002", 1000), ("ch_000003", 1250), ("ch_000004", 1250)]
    assert kept_charges(made[:1], None) == made[:1]  # no loopback Stripe: nothing refunded there


@pytest.mark.parametrize("name, families, code", [
    ("refund_on_books_failure", "runs", 1),  # books a replayed, refunded charge: no money for a booked order
    ("refund_then_park", "runs,again", 0),  # reads the refund and leaves the order to a person
])
def test_a_handler_that_refunds_when_its_books_fail_is_judged_by_the_money_it_kept(monkeypatch, name, families, code):
    """Stripe replays a key's first answer after its charge was refunded: a retry that books the
    replay books money the handler gave back. The check counted charges made, not money kept, and
    said holds (and "a charge with no ledger line" of the twin's refunded charge)."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    found, out, _ = cli(target(name), "--retries", "1", "--workers", "1", "--json")
    report = json.loads(out)
    assert found == code, report["verdicts"]
    if code:
        assert any(r["verdict"] == "silent_mismatch" and "no charge for the upload" in " ".join(r["findings"])
                   for r in report["results"])
    else:  # its refunded charge is no charge with no line: the order failed visibly, money given back
        (refunded,) = [r for r in report["results"] if r["schedule"] == "exception before dynamodb:UpdateItem on "
                       "arrival 1, 2 calls in a row; single; 1 retry"]
        assert (refunded["verdict"], refunded["effects"]["provider:charge"]) == ("failed_visibly", 0)
