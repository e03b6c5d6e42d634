"""Powertools, measured like the other handlers: the exhaustive schedules, once per fix.

A Powertools schedule costs about 80 ms (its own table, its own client), so the whole table
(567 schedules x 4 fixes, docs/reliability.md) is `python -m idem.explore.powertools`, not a
test. The tests run the schedules with Lambda's default of two retries: every fault point, how,
subset of arrivals and delivery stays in; only the retry setting is fixed. They run the two
fixes chapter 08 relies on: `book_once` on all of them (its claim is "holds"), and
`provider_key` on the `after_ledger` ones (its claim is "breaks there, and only there").
"""
from __future__ import annotations

import pytest

from idem.explore import powertools as pt
from idem.explore import schedules as S

DEFAULT_RETRIES = 2  # MaximumRetryAttempts' default


@pytest.fixture(scope="module")
def subset() -> list:
    return [s for s in pt.all_schedules() if s.retries == DEFAULT_RETRIES]


def test_the_powertools_schedules_are_the_matrix_plus_after_ledger(subset: list) -> None:
    everything = pt.all_schedules()
    named = S.all_schedules(["powertools"])
    assert len(named) == 429 and len(everything) == 567 and len(set(everything)) == 567
    assert {s.fault for s in everything} == {"none", "at_charge", "after_charge", "after_commit", pt.AFTER_LEDGER}
    assert len(subset) == 253
    assert {s.how for s in subset} == {"exception", "crash"} and {s.times for s in subset} == {"-", *S.SUBSETS}
    assert {(s.delivery, s.concurrent_at) for s in subset if s.delivery == "concurrent"} == {
        ("concurrent", "before_charge"), ("concurrent", "charged"), ("concurrent", "recorded")}


def test_book_once_holds_in_every_schedule_with_two_retries(subset: list) -> None:
    results = pt.run_schedules(subset, "book_once")
    broken = [S.label(r.outcome.scenario) + ": " + r.outcome.verdict for r in results if S.breaks(r.outcome)]
    assert broken == []
    assert max(r.outcome.charges for r in results) == 1
    assert max(r.outcome.ledger for r in results) == 1
    (tally,) = S.tally(results)
    assert tally.verdicts == BOOK_ONCE


def test_pins_gap_provider_key_books_twice_after_the_ledger_write(subset: list) -> None:
    """Pinned on purpose: with the key passed but the booking not idempotent, an error after the
    ledger write makes Powertools delete its record; the retry's charge is a replay, and the
    ledger write runs again. Never a second charge; a silent mismatch instead."""
    at_ledger = [s for s in subset if s.fault == pt.AFTER_LEDGER]
    results = pt.run_schedules(at_ledger, "provider_key")
    assert max(r.outcome.charges for r in results) == 1
    (tally,) = S.tally(results)
    assert tally.verdicts == PROVIDER_KEY_AT_LEDGER
    assert tally.caught == tally.broken  # the reconciliation job reports every one


def test_a_bad_fix_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fix 'retry'"):
        pt.run_schedules([], "retry")


#: Verdict counts, pinned: a change here is news (see docs/reliability.md for the full table).
BOOK_ONCE = {"exactly_once": 239, "needs_attention": 10, "failed_visibly": 4}  # 253 schedules
PROVIDER_KEY_AT_LEDGER = {"exactly_once": 30, "needs_attention": 5, "silent_mismatch": 27}  # 62
