"""Would an alarm notice? A rule over outcomes, checked against runs (chapter 04's exercise).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from .answers import not_yet, unfilled

#: Why each verdict matters, said only for a verdict the reader's alarm got wrong.
WHY = {
    "silent_mismatch": "money moved and your ledger has no entry, and the retry reported success, "
                       "so the failure queue is empty: compare outcome.charges with outcome.ledger.",
    "silent_loss": "no money moved and no entry was written, so both counts are 0 and the failure "
                   "queue is empty. The only trace is a 'claimed' item with no ledger entry behind it.",
    "exactly_once": "this run went right: every charge is in the ledger. (With after_commit always, "
                    "the event reached the failure queue after its work was done: a message there "
                    "is no proof of lost money.) An alarm that fires on good runs soon gets ignored.",
}


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


def explain_alarm(alarm: Callable[[Any], Any], outcomes: Iterable[Any]) -> str:
    """Chapter 04's exercise: the alarm's disagreements with the verdicts, each verdict it got
    wrong with why it matters, or "Right". An alarm that answers None on every run is unfilled."""
    outcomes = list(outcomes)
    if all(unfilled(alarm(outcome)) for outcome in outcomes):
        return not_yet("my_alarm returns None: return True or False")
    problems = check_alarm(alarm, outcomes)
    if not problems:
        quiet = sum(o.verdict != "exactly_once" for o in outcomes)
        return f"Right: it fires on all {quiet} quiet failures and stays silent on the rest."
    lines = [f"Your alarm {problem}" for problem in problems]
    lines += [f"  why it matters ({verdict}): {why}" for verdict, why in WHY.items()
              if any(f": {verdict} " in problem for problem in problems)]
    return "\n".join(lines)
