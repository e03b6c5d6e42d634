"""What `idem check` found, as a person reads it (`explain`) and as data (`to_json`, in the shape
check-report.schema.json describes), with one schedule's timeline."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckInputError
from ..families import second_fault, timed
from ..families.build import DIMENSIONS
from ..judge.books import Books
from ..judge.result import Result
from ..judge.verdicts import BOOKS as LINES, BREAKS, MONEY as CHARGES, Verdict
from ..run import triggers
from ..target.target import Target

#: The version of `CheckReport.to_json`'s shape (docs/check-report.schema.json).
SCHEMA_VERSION = 3
VERDICTS = tuple(v.value for v in Verdict)


@dataclass
class CheckReport:
    """Everything `check_handler` found: one result per schedule, and how to read them."""

    target: Target
    effects: tuple[str, ...]
    boundaries: list[Any]
    baseline: dict[str, int]
    results: list[Result]
    books: Books | None = None
    trigger: str = "s3"
    runs: int = 0  # how many schedules ran; the others' runs were the same as one of these (reuse)
    #: what the check saw and cannot judge, said under the verdict (idem.explore.judge.money.file_note)
    notes: list[str] = field(default_factory=list)

    @property
    def broken(self) -> list[Result]:
        return [r for r in self.results if r.breaks]

    @property
    def holds(self) -> bool:
        return not self.broken

    @property
    def retries(self) -> tuple[int, ...]:
        """The MaximumRetryAttempts values the schedules tried."""
        return tuple(sorted({r.schedule.retries for r in self.results}))

    def smallest(self, verdict: str) -> Result | None:
        """The smallest schedule that ended in `verdict`, if any did."""
        return min((r for r in self.results if r.verdict == verdict), key=lambda r: r.schedule.size,
                   default=None)

    def dimensions(self) -> dict[str, int]:
        """How many schedules each family added (DIMENSIONS); the second round's family only when it ran
        (`idem.explore.families.second_fault`: a handler that makes no call its clean run never made has none)."""
        counts = Counter(r.schedule.dimension for r in self.results)
        return {name: counts[name] for name in DIMENSIONS if name != second_fault.FAMILY or counts[name]}

    def tally(self) -> dict[str, int]:
        counts = Counter(r.verdict for r in self.results)
        return {v: counts[v] for v in VERDICTS if counts[v]}

    def smallest_break(self) -> Result | None:
        """The smallest schedule that breaks the handler, if any does."""
        return min(self.broken, key=lambda r: r.schedule.size, default=None)

    def books_judged(self) -> str:
        """Whether the books were weighed against the money, and where they were read."""
        if self.books is None:
            return "books: not judged (--books none)"
        if LINES not in self.baseline:
            return (f"books: NOT judged: no item with {self.books.attribute} in {self.books.table_env} "
                    "on the clean run (see --books, or books= in Python)")
        return f"books: ledger lines are items of {self.books.table_env} with {self.books.attribute}"

    def discarded(self) -> list[str]:
        """The line saying why a failed event was lost: the function as deployed has no failure
        destination (docs/check_from_a_template.md P16), when a break is a silent one."""
        deployed = self.target.deployed
        silent = {Verdict.SILENT_LOSS.value, Verdict.SILENT_MISMATCH.value}
        if (deployed is None or deployed.failure_destination or self.trigger == "sqs"
                or not any(r.verdict in silent for r in self.broken)):
            return []
        return ["", "the function as deployed has no failure destination: Lambda discards an event that fails "
                    "every attempt or outlives its maximum age, and nothing alerts; add a DeadLetterQueue or an "
                    "EventInvokeConfig OnFailure destination "
                    "(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)"]

    def none_through(self) -> list[str]:
        """Said under a "holds" where no schedule ended exactly_once: nothing moved wrongly, and
        nothing went through either (the clean run did, so something in the schedules stops every order)."""
        if any(r.verdict == Verdict.EXACTLY_ONCE.value for r in self.results):
            return []
        return ["but not one schedule ended exactly_once: every order failed, was declined or needs attention, "
                "though the clean run's went through. Read why a schedule with no fault ended as it did "
                "(--json lists each result's findings) before trusting this handler with orders."]

    def assumed(self) -> list[str]:
        """Without --template, the failure queue the check gave the function, said where it holds
        (docs/check_from_a_template.md P16): where there is none, a failed event is lost."""
        if self.target.deployed is not None:
            return []
        if self.trigger == "sqs":  # "Amazon SQS automatically deletes messages left in a queue longer than the
            # retention period" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html)
            given = ("a redrive policy sends a failing message to a dead-letter queue; without one it is retried "
                     "until the queue's retention period ends, then deleted")
        else:  # https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
            given = ("a failed event reaches a failure destination (a DeadLetterQueue or an OnFailure destination); "
                     "without one Lambda discards it")
        return [f"(assumed: {given}. Pass --template to check the function as deployed.)"]

    def explain(self) -> str:
        """The report a person reads: the boundaries, the verdicts, the smallest break."""
        # a handler that charges nothing is told of its effects only, never of charges or books
        money = bool(self.baseline.get(CHARGES)) or not self.baseline
        counted = [n for n in self.baseline if money or n not in (CHARGES, LINES)]
        # the families of schedules (--help says what each is)
        families = ", ".join(f"{n} {name}" for name, n in self.dimensions().items())
        lines = [f"{self.target.name}: {len(self.results)} schedules ({families}) over {len(self.boundaries)} "
                 f"boundaries; effects counted: {', '.join(counted) or 'none'}"
                 + ("; provider: Stripe's SDK, over a loopback Stripe" if self.target.provider == "stripe" else ""),
                 "boundaries (from a clean run): " + " > ".join(map(str, self.boundaries)),
                 *([triggers.describe(self.trigger, self.target.deployed)] if self.trigger != "s3" else []),
                 *([self.target.deployed.describe(self.trigger, self.retries)] if self.target.deployed else []),
                 *([self.books_judged()] if money else []),
                 *([f"{self.runs} of them run: each other schedule asked only what one of these answered, "
                    "and has its result"] if 0 < self.runs < len(self.results) else []), ""]
        width = max(map(len, VERDICTS))
        for verdict, n in self.tally().items():
            mark = "  BREAK" if verdict in BREAKS or any(r.clean for r in self.results) else ""
            lines.append(f"  {verdict:<{width}}  {n:>5}{mark}")
        smallest = self.smallest_break()
        if smallest is None:
            lines += ["", f"holds: no double effect, silent loss or silent mismatch in any of the "
                          f"{len(self.results)} schedules", *self.none_through(), *self.notes, *self.assumed()]
            return "\n".join(lines)
        lines += self.discarded()
        if smallest.clean:
            lines += ["", "breaks on the clean run (no fault, one delivery, no retry), so no other schedule was run:",
                      *timeline(smallest, smallest.effects), *self.notes]
            return "\n".join(lines)
        broken = Counter(r.schedule.dimension for r in self.broken)
        where = ", ".join(f"{broken[name]} of the {n} {name}" for name, n in self.dimensions().items() if broken[name])
        lines += ["", f"breaks in {len(self.broken)} of {len(self.results)} schedules ({where}); the smallest:",
                  *timeline(smallest, self.baseline), *self.notes]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as data, in the shape docs/check-report.schema.json describes."""
        smallest = self.smallest_break()
        return {"schema_version": SCHEMA_VERSION, "exit_code": 0 if self.holds else 1,
                "target": self.target.name, "env": dict(self.target.env), "trigger": self.trigger,
                **({"deployed": self.target.deployed.as_dict()} if self.target.deployed else {}),
                "boundaries": [str(b) for b in self.boundaries], "baseline": self.baseline,
                "books": None if self.books is None else str(self.books),
                "books_judged": LINES in self.baseline,
                "schedules": len(self.results), "runs": self.runs or len(self.results),
                "dimensions": self.dimensions(),
                "verdicts": self.tally(), "breaks": len(self.broken),
                "holds": self.holds, "notes": list(self.notes),
                "smallest_break": None if smallest is None else {
                    "schedule": timed.result_label(smallest), "verdict": smallest.verdict,
                    "effects": smallest.effects, "failure_queue": smallest.dlq,
                    "findings": smallest.findings, "timeline": timeline(smallest, self.baseline)},
                "results": [{"schedule": timed.result_label(r), "verdict": r.verdict, "effects": r.effects,
                             "failure_queue": r.dlq, "findings": r.findings,
                             **({"same_run_as": r.ran_as.label()} if r.ran_as else {})} for r in self.results]}


def error_json(error: CheckInputError) -> dict[str, Any]:
    """What `--json` prints when the check could not start (2) or finish (3)."""
    return {"schema_version": SCHEMA_VERSION, "exit_code": error.exit_code, "error": str(error),
            "handler_traceback": error.handler_traceback or None}


def timeline(result: Result, baseline: dict[str, int]) -> list[str]:
    """One schedule as a person reads it: each invocation, the boundaries it crossed, the end."""
    lines = [f"  schedule: {timed.result_label(result)}"]
    for a in result.attempts:
        where = f"{'cold' if a.cold else 'warm'} container {a.container}"
        lines.append(f"  t={a.start:>6.0f}s  delivery {a.delivery}, attempt {a.attempt} ({where})")
        for crossing in a.crossings:
            fault = f"   <-- {crossing.failed} injected here" if crossing.failed else ""
            late = f"  (t={crossing.t:.0f}s: a slow call)" if crossing.t > a.start + 0.5 else ""
            note = f"  ({crossing.note})" if crossing.note else ""
            lines.append(f"      {crossing.boundary}{late}{note}{fault}")
        lines.append(f"      => {a.outcome}" + (f": {a.error}" if a.error else ""))
    counts = ", ".join(f"{name} {result.effects.get(name, 0)}" + ("" if result.clean else f" (clean run {n})")
                       for name, n in baseline.items() if n)
    lines.append(f"  effects: {counts or 'none'}; failure queue: {result.dlq} -> {result.verdict}")
    if result.findings:
        lines.append(f"  wrong: {'; '.join(result.findings)}")
    return lines
