"""Real threads, many rounds, Python's switch interval lowered to 1 microsecond.

Through the whole handler path (each thread its own App, as concurrent Lambda
containers are), keyed and claim_first charge exactly once every round; and moto as
shipped, without idem's lock, lets two threads win, so the lock is known to matter.
IDEM_SOAK=1 runs ten times the rounds.
"""
from __future__ import annotations

import os
import sys

import pytest

from idem.sim.atomic import is_atomic, unpatched, widened_condition_window
from idem.explore.race import STRATEGIES, race
from idem.sim.world import LocalWorld

SOAK = bool(os.environ.get("IDEM_SOAK"))
ROUNDS = 300 if SOAK else 30


@pytest.fixture
def world():
    with LocalWorld(prefix="racing") as w:
        yield w


@pytest.mark.parametrize("handler", ["keyed", "claim_first"])
def test_guarded_handlers_charge_exactly_once_every_round(world: LocalWorld, handler: str) -> None:
    report = race(16, ROUNDS, handler, world=world)
    assert report.winners_per_round == (1,) * ROUNDS, report.summary()
    assert report.clean_rounds == ROUNDS
    # every round's one winner finished its books; the losers wrote nothing
    assert world.ledger().entry("racer") == (ROUNDS, 500 * ROUNDS)


def test_keyed_losers_are_told_to_retry(world: LocalWorld) -> None:
    report = race(8, 5, "keyed", world=world)
    assert report.clean_rounds == 5
    assert 0 < report.errors <= 7 * 5  # a loser that saw a live lease raised WorkInProgress


def test_the_bare_conditional_put_has_one_winner_every_round(world: LocalWorld) -> None:
    report = race(16, ROUNDS * 2, "conditional_put", world=world)
    assert report.clean_rounds == ROUNDS * 2, report.summary()


def test_robust_charges_more_than_once_under_real_threads_on_purpose(world: LocalWorld) -> None:
    """robust reads before it writes: a racer that reads in_progress charges too."""
    report = race(8, 20, "robust", world=world)
    assert max(report.winners_per_round) >= 2, report.summary()


def test_naive_charges_once_per_thread_on_purpose(world: LocalWorld) -> None:
    report = race(4, 3, "naive", world=world)
    assert report.winners_per_round == (4, 4, 4)


def test_moto_as_shipped_lets_two_threads_win_the_same_claim(world: LocalWorld) -> None:
    """Without the lock, moto reads, checks and writes with a gap: both racers pass the
    condition. The widened window makes the gap certain instead of rare: 50 ms, since a 2 ms
    window was missed in all 3 rounds once, with the full suite loading both cores."""
    with unpatched(), widened_condition_window(0.05):
        assert not is_atomic()
        bare = race(4, 3, "conditional_put", world=world)
        charged = race(4, 3, "claim_first", world=world)
    assert is_atomic()
    assert max(bare.winners_per_round) >= 2, bare.summary()
    assert max(charged.winners_per_round) >= 2, charged.summary()
    # the same window with the lock in place: exactly one, every round
    with widened_condition_window():
        assert race(4, 3, "claim_first", world=world).clean_rounds == 3


def test_the_switch_interval_is_restored() -> None:
    before = sys.getswitchinterval()
    with LocalWorld(prefix="racing") as w:
        race(2, 1, "keyed", world=w, switch=1e-6)
    assert sys.getswitchinterval() == before


def test_unknown_strategies_and_tiny_races_are_refused() -> None:
    assert set(STRATEGIES) >= {"conditional_put", "read_then_write", "naive", "claim_first", "robust", "keyed"}
    with pytest.raises(ValueError, match="unknown strategy"):
        race(2, 1, "optimistic")
    with pytest.raises(ValueError, match="at least 2 threads"):
        race(1, 1, "keyed")


@pytest.mark.soak
@pytest.mark.skipif(not SOAK, reason="the CLI's 16 x 500 race runs with IDEM_SOAK=1")
def test_the_cli_race_reports_500_of_500(capsys: pytest.CaptureFixture[str]) -> None:
    from idem import cli

    assert cli.main(["race", "--threads", "16", "--rounds", "500"]) == 0
    assert "500 of 500 rounds had exactly one winner" in capsys.readouterr().out
