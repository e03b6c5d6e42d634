"""Chapter 11's exercise: predict what the check finds in a handler the chapter did not run, then
run it.

The handler is the chapter's `no_claim.py` with the key the check asked for: every charge carries
an idempotency key made from the order. The reader predicts three things before the check runs:

1. `twice_within_a_day`: does any retry or copy within a day charge an order twice?
2. `charges_attribute`: the first attempt charges and books, its answer to Lambda is lost, Lambda
   retries once: what number does the account's `charges` attribute hold at the end?
3. `charged_after_redrive`: the first attempt charges and fails before its books, and so does the
   retry; the failure queue is redriven a day and a second later: is the order charged again?

The truths are read from the check's own report, never written here. While the predictions are
empty the checker says only what to fill in and runs nothing. A wrong prediction gets a question
that narrows where to think, never the value; only when all three are right does it show the run.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from ..answers import not_yet, unfilled

#: The families whose schedules send an order again a day or more later (idem/explore/timed.py).
DAYS_LATER = ("late", "again")
#: The schedule of prediction 2: the handler's answer to Lambda lost after it returned, one retry.
LOST_ANSWER = "exception after the handler returned on arrival 1; single; 1 retry"
#: The schedule of prediction 3: the charge made, the books never written, twice; redriven a day later.
REDRIVEN = ("exception before dynamodb:UpdateItem on arrival 1,2; then the failure queue redriven "
            "1 d 1 s later (past Stripe's 24-hour key window); 1 retry")
#: The account's counter the handler's books add to.
COUNTER = "charges"


@dataclass(frozen=True)
class Truths:
    """What the check found, for the three predictions."""

    twice_within_a_day: bool
    charges_attribute: int
    charged_after_redrive: bool


def truths(report: Any) -> Truths:
    """The three answers, read from a check report of the exercise's handler (books named as
    `dynamodb:UpdateItem`, retries=(1,))."""
    by_label = {r.schedule.label(): r for r in report.results}
    missing = [label for label in (LOST_ANSWER, REDRIVEN) if label not in by_label]
    if missing:
        raise LookupError(f"the check built no schedule {missing[0]!r}: the exercise asks about it "
                          "(retries=(1,) and the books named as dynamodb:UpdateItem build it)")
    lost, redriven = by_label[LOST_ANSWER], by_label[REDRIVEN]
    (account,) = [f.content for f in lost.left if f.effect == "dynamodb:UpdateItem" and COUNTER in f.content]
    return Truths(
        twice_within_a_day=any(r.verdict == "double_charge" and r.schedule.dimension not in DAYS_LATER
                               for r in report.results),
        charges_attribute=int(account[COUNTER]),
        charged_after_redrive=redriven.verdict == "double_charge")


#: For each prediction, a question that narrows where to think when the prediction is wrong.
HINTS = {
    "twice_within_a_day": "Not what the check found. Within a day, what does the provider do with "
                          "a second request that carries a key it has already seen?",
    "charges_attribute": "Not what the check found. Follow the retry line by line, past the "
                         "provider's answer: which write runs next, and does anything stop it?",
    "charged_after_redrive": "Not what the check found. How long does the provider remember a "
                             "key, and what does it do with one it has forgotten?",
}


def check_prediction(twice_within_a_day: Any, charges_attribute: Any, charged_after_redrive: Any,
                     run: Callable[[], Any]) -> str:
    """Compare the reader's three predictions with the check. `run` makes the check report (it is
    called only once every prediction is filled); all right, the answer shows what the run found."""
    given = {"twice_within_a_day": twice_within_a_day, "charges_attribute": charges_attribute,
             "charged_after_redrive": charged_after_redrive}
    empty = [name for name, value in given.items() if unfilled(value)]
    if empty:
        return textwrap.fill(not_yet(f"fill in {', '.join(empty)} in the cell above, run it, then run this cell"), 100)
    for name in ("twice_within_a_day", "charged_after_redrive"):
        if not isinstance(given[name], bool):
            return f"{name} is a yes or no: write True or False, not {given[name]!r}."
    if isinstance(charges_attribute, bool) or not isinstance(charges_attribute, int):
        return f"charges_attribute is a whole number, not {charges_attribute!r}."
    found = truths(run())
    wrong = [name for name, value in given.items() if getattr(found, name) != value]
    if not wrong:
        twice = "charged an order twice" if found.twice_within_a_day else "charged any order twice"
        redrive = "was charged again" if found.charged_after_redrive else "was not charged again"
        return textwrap.fill(
            f"Right on all three. {'Some' if found.twice_within_a_day else 'No'} retry or copy within a "
            f"day {twice}; the lost answer left {COUNTER} at {found.charges_attribute}; the order "
            f"redriven a day later {redrive}. Open the solution for why, and for a handler that holds.", 100)
    lines = [f"{name}: right" if name not in wrong else f"{name}: {HINTS[name]}" for name in given]
    lines.append("Change the predictions that are wrong, run their cell, then this one.")
    return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") for line in lines)
