"""Every schedule of the provider's own outcomes (Stripe API v1 rules): keyed holds in all.

A provider outcome (down before executing, a saved 500, a 409, a decline) on any set of
arrivals at the charge call, for every delivery and retry setting: 236 distinct schedules
per handler. Kept apart from tests/test_schedules.py, whose pinned table (README,
docs/reliability.md) covers the faults at the handler's own boundaries and is unchanged.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from idem.explore import schedules as S
from idem.explore.judge.verdicts import PROVIDER_VERDICTS

#: Verdict counts per handler over every distinct provider-outcome schedule (236 each).
PINNED = {
    "naive": {"double_charge": 150, "exactly_once": 70, "needs_attention": 1, "failed_visibly": 15},
    "claim_first": {"exactly_once": 128, "needs_attention": 5, "silent_mismatch": 22,
                    "failed_visibly": 15, "silent_loss": 66},
    "robust": {"double_charge": 52, "exactly_once": 168, "needs_attention": 1, "failed_visibly": 15},
    "keyed": {"exactly_once": 168, "needs_attention": 27, "failed_visibly": 16, "declined": 25},
}


@pytest.fixture(scope="module")
def results() -> list[S.Result]:
    return S.run_schedules(S.provider_schedules())


def test_the_provider_schedules_cover_every_outcome() -> None:
    schedules = S.provider_schedules()
    assert len(schedules) == 944 and len(set(schedules)) == 944
    assert {s.fault for s in schedules} == {"provider_down", "provider_500", "provider_409", "declined"}


def test_keyed_holds_against_every_provider_outcome(results: list[S.Result]) -> None:
    keyed = [r for r in results if r.outcome.scenario.handler == "keyed"]
    broken = {S.label(r.outcome.scenario): S.keyed_violations(r) for r in keyed if S.keyed_violations(r)}
    assert broken == {}
    assert max(r.outcome.charges for r in keyed) == 1


def test_provider_outcome_counts_pinned(results: list[S.Result]) -> None:
    tallies = S.tally(results)
    print("\n" + S.table(tallies, PROVIDER_VERDICTS))
    assert {t.handler: t.verdicts for t in tallies} == PINNED, S.table(tallies, PROVIDER_VERDICTS)
    assert [(t.handler, t.caught) for t in tallies] == [(t.handler, t.broken) for t in tallies]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert S.table(tallies, PROVIDER_VERDICTS) in readme, "README.md is stale: paste the table printed above"
