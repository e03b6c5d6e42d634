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


def test_a_second_order_at_the_same_name_is_the_same_size_so_a_key_of_name_and_size_breaks(monkeypatch):
    """S3's event gives the object's size; a key of the name and the size takes a second order of the
    same length for the first. The check's second order was 2 bytes longer than the first (`-2` in its
    order id), so such a key held; the first order now ends in two spaces of JSON whitespace."""
    from idem.explore.run.objects import UserObject
    from idem.explore.run.runner import order_body

    assert len(order_body(7)) == len(order_body(7, 2)) and order_body(7) != order_body(7, 2)
    obj = UserObject(path="a.json", body=b'{"order_id": "A-1001", "amount_cents": 1250}', key="a.json")
    assert len(obj.body_for(42)) == len(obj.body_for(42, second_order=True))
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "overwrite")
    code, out, _ = cli(target("size_key"), "--retries", "0", "--workers", "1", "--json")
    assert code == 1 and json.loads(out)["verdicts"].get("silent_loss")
