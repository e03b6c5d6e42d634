"""The scenario matrix, pinned cell by cell: (charges, verdict) for each handler and row.

Some cells pin a bug on purpose: the naive handler's double charges, claim_first's silent
loss and silent mismatch, robust's double charges. Their test ids say so.
"""
from __future__ import annotations

import pytest

from idem.explore import scenarios as sc
from idem.explore.judge.verdicts import judge_run

# (fault, times, delivery) -> handler -> (charges, verdict); the table.
EXPECTED = {
    ("none", "-", "single"): dict(naive=(1, "exactly_once"), claim_first=(1, "exactly_once"),
                                  robust=(1, "exactly_once"), keyed=(1, "exactly_once")),
    ("at_charge", "once", "single"): dict(naive=(1, "exactly_once"), claim_first=(0, "silent_loss"),
                                          robust=(1, "exactly_once"), keyed=(1, "exactly_once")),
    ("at_charge", "always", "single"): dict(naive=(0, "failed_visibly"), claim_first=(0, "silent_loss"),
                                            robust=(0, "failed_visibly"), keyed=(0, "failed_visibly")),
    ("after_charge", "once", "single"): dict(naive=(2, "double_charge"), claim_first=(1, "silent_mismatch"),
                                             robust=(2, "double_charge"), keyed=(1, "exactly_once")),
    ("after_charge", "always", "single"): dict(naive=(3, "double_charge"),
                                               claim_first=(1, "silent_mismatch"),
                                               robust=(3, "double_charge"), keyed=(1, "needs_attention")),
    ("after_commit", "once", "single"): dict(naive=(2, "double_charge"), claim_first=(1, "exactly_once"),
                                             robust=(1, "exactly_once"), keyed=(1, "exactly_once")),
    ("none", "-", "duplicate"): dict(naive=(2, "double_charge"), claim_first=(1, "exactly_once"),
                                     robust=(1, "exactly_once"), keyed=(1, "exactly_once")),
    ("none", "-", "concurrent"): dict(naive=(2, "double_charge"), claim_first=(1, "exactly_once"),
                                      robust=(2, "double_charge"), keyed=(1, "exactly_once")),
}
BUG_ON_PURPOSE = {"double_charge", "silent_loss", "silent_mismatch"}
CASES = [(row, handler, cell) for row, cells in EXPECTED.items() for handler, cell in cells.items()]


def case_id(case):
    (fault, times, delivery), handler, (charges, verdict) = case
    pinned = "pins_bug_" if verdict in BUG_ON_PURPOSE else ""
    return f"{pinned}{handler}-{fault}-{times}-{delivery}-{charges}-{verdict}"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_matrix_cell(case):
    (fault, times, delivery), handler, (charges, verdict) = case
    outcome = sc.run(sc.Scenario(handler, fault, times, delivery))
    assert (outcome.charges, outcome.verdict) == (charges, verdict)


def test_naive_double_charges_on_a_transient_failure_on_purpose():
    outcome = sc.run(sc.Scenario("naive", "after_charge", "once"))
    assert outcome.charges == 2 and outcome.ledger == 1 and outcome.dlq == 0


def test_claim_first_leaves_money_and_books_apart_on_poison_on_purpose():
    outcome = sc.run(sc.Scenario("claim_first", "after_charge", "always"))
    assert (outcome.charges, outcome.ledger, outcome.dlq, outcome.record) == (1, 0, 0, "claimed")


def test_keyed_costs_three_calls_first_and_one_per_duplicate():
    # the claim, the customer mapping's read (who pays) and the commit; a duplicate's claim is refused
    first = sc.run(sc.Scenario("keyed"))
    assert [a.dynamodb_calls for a in first.trace] == [3]
    twice = sc.run(sc.Scenario("keyed", delivery="duplicate"))
    assert [a.dynamodb_calls for a in twice.trace] == [3, 1]


def test_robust_costs_four_calls_first_and_one_per_duplicate():
    # get, put in_progress, the ledger entry and mark done: the entry is a call of its own
    twice = sc.run(sc.Scenario("robust", delivery="duplicate"))
    assert [a.dynamodb_calls for a in twice.trace] == [4, 1]


def test_keyed_poison_after_the_charge_leaves_a_flagged_record_and_a_queue_entry():
    outcome = sc.run(sc.Scenario("keyed", "after_charge", "always"))
    assert (outcome.record, outcome.dlq, outcome.ledger) == ("in_progress", 1, 0)


def test_a_concurrent_keyed_duplicate_is_told_to_retry_later():
    outcome = sc.run(sc.Scenario("keyed", delivery="concurrent"))
    assert [(a.delivery, a.attempt, a.outcome) for a in outcome.trace] == [
        (2, 1, "error"), (1, 1, "ok"), (2, 2, "ok")] or \
        sorted((a.delivery, a.attempt, a.outcome) for a in outcome.trace) == [
        (1, 1, "ok"), (2, 1, "error"), (2, 2, "ok")]
    assert "WorkInProgress" in next(a.error for a in outcome.trace if a.outcome == "error")


@pytest.mark.parametrize("charges, completed, dlq, record, verdict", [
    (2, True, 0, "done", "double_charge"),
    (1, True, 0, "done", "exactly_once"),
    (1, False, 1, "-", "needs_attention"),
    (1, False, 0, "in_progress", "needs_attention"),
    (1, False, 0, "claimed", "silent_mismatch"),
    (0, False, 1, "in_progress", "failed_visibly"),
    (0, False, 0, "claimed", "silent_loss"),
])
def test_verdict_rules_in_order(charges, completed, dlq, record, verdict):
    assert judge_run(charges, completed, dlq, record) == verdict


def test_the_whole_matrix_covers_every_fault_time_and_delivery():
    scenarios = sc.all_scenarios(["keyed"])
    assert len(scenarios) == 3 + 3 * 2 * 3
    assert {(s.fault, s.times) for s in scenarios} >= {("none", "-"), ("after_commit", "always")}


def test_bad_scenarios_are_refused():
    with pytest.raises(ValueError, match="unknown handler"):
        sc.run(sc.Scenario("nope"))
    with pytest.raises(ValueError, match="times is '-'"):
        sc.run(sc.Scenario("keyed", "none", "once"))
