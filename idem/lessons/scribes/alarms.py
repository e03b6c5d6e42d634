"""Would an alarm notice? A rule over outcomes, checked against runs (chapter 04's exercise).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..answers import folded, not_yet, unfilled

#: Why each verdict matters, said only for a verdict the reader's alarm got wrong.
WHY = {
    "silent_mismatch": "money moved, and the retry reported success, so the failure queue is empty. "
                       "Two of the things you may read disagree in this run: which two?",
    "silent_loss": "an upload was never charged, nothing counted it, and the failure queue is "
                   "empty. Look at what the table holds for each upload, not only at the counts.",
    "exactly_once": "this run went right. (With after_commit always, the event reached the failure "
                    "queue after its work was done: a message there is no proof of lost money.) An "
                    "alarm that fires on good runs soon gets ignored.",
}


@dataclass
class Case:
    """A run the chapter's table does not have: what an alarm may read of it, and its verdict."""

    label: str
    charges: int
    ledger: int
    dlq: int
    verdict: str
    items: list[dict[str, Any]] = field(default_factory=list)


def _label(outcome: Any) -> str:
    label = getattr(outcome, "label", None)
    if label:
        return str(label)
    s = outcome.scenario
    return f"{s.handler} {s.fault}/{s.times}"


def two_uploads(first_lost: bool) -> Case:
    """claim_first on two uploads of alice's, one after the other: both charged, or the first one's
    charge call failing once (its retry finds the claim and stands down: a silent loss beside a
    good charge). Run on moto through the local Lambda, read back as the exercise's outcomes are."""
    from ...sim.faults import FaultPlan
    from ...sim.runtime import LocalLambda
    from ...sim.world import LocalWorld

    fault = FaultPlan.at_point("at_charge", "once") if first_lost else None
    with LocalWorld(prefix="alarm") as world:
        for name, plan in (("alice/order-1.txt", fault), ("alice/order-2.txt", None)):
            runtime = LocalLambda(world, world.env("claim_first"), fault=plan)
            runtime.send(world.event(world.upload(name)))
            runtime.run()
        ledger = world.ledger()
        charges, entries = len(world.provider().charges()), ledger.entry("alice")[0]
        dlq = world.failure_queue_depth()
        claims = sum(1 for item in ledger.items() if item.get("status") == "claimed")
        verdict = "exactly_once" if charges == entries == claims and not dlq else "silent_loss"
        label = "claim_first, two uploads, " + ("the first one's charge failing once" if first_lost
                                                 else "both charged")
        return Case(label, charges, entries, dlq, verdict, items=ledger.items())


def unseen_runs() -> list[Case]:
    """The two runs chapter 04's check adds to the table's rows: cases the chapter did not run."""
    return [two_uploads(first_lost=False), two_uploads(first_lost=True)]


def check_alarm(alarm: Callable[[Any], bool], outcomes: Iterable[Any]) -> list[str]:
    """Compare an alarm rule with the verdicts: every outcome that is not exactly_once
    should raise it, and exactly_once should not. Returns one line per disagreement."""
    problems = []
    for outcome in outcomes:
        should = outcome.verdict != "exactly_once"
        said = bool(alarm(outcome))
        if said != should:
            what = "stays quiet on" if should else "fires on"
            problems.append(f"{what} {_label(outcome)}: {outcome.verdict} "
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
    return folded("\n".join(lines))
