"""Would an alarm notice? A rule over outcomes, checked against runs (chapter 04's exercise).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable


def check_alarm(alarm: Callable[[Any], bool], outcomes: Iterable[Any]) -> list[str]:
    """Compare an alarm rule with the verdicts: every outcome that is not exactly_once
    should raise it, and exactly_once should not. Returns one line per disagreement."""
    problems = []
    for outcome in outcomes:
        should = outcome.verdict != "exactly_once"
        said = bool(alarm(outcome))
        if said != should:
            s = outcome.scenario
            what = "stays quiet on" if should else "fires on"
            problems.append(f"{what} {s.handler} {s.fault}/{s.times}: {outcome.verdict} "
                            f"(charges={outcome.charges}, ledger={outcome.ledger}, dlq={outcome.dlq})")
    return problems
