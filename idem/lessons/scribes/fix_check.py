"""Check a fix of robust's concurrent hole: a handle function you wrote, run through copies.

    report = check_fix("scratch_05/my_robust.py")
    print(report.explain())

The file defines `handle(obj, svc, context)`, the shape of `idem.core.handlers.robust.handle`.
It runs as the function's handler (`idem.sim.runtime.handle_entry`) in the local runtime, one fresh
world per run, and each run is judged as the scenario matrix judges (the provider's charges,
the ledger entry, the record, the failure queue):

1. a clean run: one delivery, no fault. It also lists the calls the handler makes;
2. a second copy of the event starting at each place `idem check` would start one: before
   the first call and after each call of the first invocation;
3. the provider down on the first attempt: the retry must still charge, as robust's does;
4. the provider down on every attempt: the event must reach the failure queue;
5. the process dying just before the charge on the first attempt: the work must be finished,
   or the event must reach the failure queue, never lost without a trace.

`explain()` says, for the first run that went wrong, why the handler's answer is wrong. Until the
file's `handle` differs from the handler the chapter gives (`STARTING_HANDLE`, robust's), it says
only what to do: the reasons would give the fix away before the reader tried one.
"""
from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...explore.families.build import copy_places
from ...core.errors import ConfigError
from ...explore import scenarios as sc
from ...sim.runtime import LocalLambda
from ...explore.judge.verdicts import Verdict
from ...sim.world import LocalWorld
from ..answers import not_yet

#: The handle function chapter 05's exercise cell starts with: robust's, the question itself.
STARTING_HANDLE = '''
def handle(obj, svc, context):
    order = order_for(obj, svc)
    record = svc.ledger.get_record(order.key)
    if record and record.status is Status.DONE:
        return {"status": "duplicate"}
    if record is None and not svc.ledger.put_in_progress(order.key, order.source).won:
        return {"status": "duplicate"}
    charge = charge_step(svc, order)
    svc.ledger.add_entry(order.account, order.amount_cents)
    svc.ledger.mark_done(order.key, receipt(charge))
    return receipt(charge)
'''

ENTRY = "idem.sim.runtime.handle_entry"
EXACTLY_ONCE, FAILED_VISIBLY = Verdict.EXACTLY_ONCE.value, Verdict.FAILED_VISIBLY.value
#: What each kind of run may end in.
EXPECTED = {"clean": (EXACTLY_ONCE,), "copy": (EXACTLY_ONCE,), "down once": (EXACTLY_ONCE,),
            "down always": (FAILED_VISIBLY,), "dies": (EXACTLY_ONCE, FAILED_VISIBLY)}


@dataclass(frozen=True)
class FixRun:
    kind: str  # clean, copy, down once, down always, dies
    label: str  # what happened, for a person
    outcome: sc.Outcome

    @property
    def ok(self) -> bool:
        return self.outcome.verdict in EXPECTED[self.kind]

    def row(self) -> dict[str, Any]:
        o = self.outcome
        return {"run": self.label, "charges": o.charges, "ledger_charges": o.ledger,
                "record_status": o.record, "in_failure_queue": o.dlq, "verdict": o.verdict,
                "as expected": "yes" if self.ok else "NO"}


@dataclass
class FixReport:
    handle: str
    runs: list[FixRun] = field(default_factory=list)
    unchanged: bool = False  # the file still holds the handler the chapter gives

    @property
    def holds(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)

    def first_wrong(self) -> FixRun | None:
        return next((r for r in self.runs if not r.ok), None)

    def rows(self) -> list[dict[str, Any]]:
        return [r.row() for r in self.runs]

    def explain(self) -> str:
        if self.unchanged:
            return textwrap.fill(not_yet("handle is still robust's handler, as the chapter gives it: change "
                                         "it, run its cell to save the file, then run this check"), 100)
        wrong = self.first_wrong()
        if wrong is None:
            copies = sum(1 for r in self.runs if r.kind == "copy")
            return textwrap.fill(f"Right: no copy charged twice ({copies} starting places tried), the "
                                 "retry after a failed charge charged once, and a provider down for good "
                                 "or a process that died left the event in the failure queue.", 100)
        return textwrap.fill(f"Not yet ({wrong.label}): {why(wrong)}", 100)


def why(run: FixRun) -> str:
    """Why a run's outcome shows the handler wrong."""
    o, verdict = run.outcome, run.outcome.verdict
    seen = f"{o.charges} charge(s), {o.ledger} ledger entry(ies), record {o.record}"
    if run.kind == "clean":
        return (f"even with one delivery and no fault the run ended in {verdict} ({seen}). "
                "Keep robust's work steps: charge, add the ledger entry, mark the record done.")
    if run.kind == "copy" and verdict == Verdict.DOUBLE_CHARGE.value:
        return ("the copy charged too. It found the first invocation's record, and your handler "
                "still went to work: to it, in_progress still means 'an earlier attempt failed'. "
                "Which one request can only one copy win (chapter 02), and what is left for the "
                "copy that loses it?")
    if run.kind == "down once" and verdict == Verdict.SILENT_LOSS.value:
        return ("the retry lost the conditional put to the record of its own failed attempt, and "
                "stood down. Nothing was charged and nothing alerts: claim-first's silent loss "
                "(chapter 04). When a charge fails, what must the table look like for its retry to "
                "win the work again?")
    if run.kind == "down once" and verdict == FAILED_VISIBLY:
        return ("the retry found the in_progress record of its own failed attempt, took it for a "
                "copy at work, and never charged. The event ends in the failure queue, and a "
                "redrive would meet the same record. What could the failed attempt do about its own "
                "record before it gives up?")
    if run.kind == "down always":
        return (f"the provider was down on every attempt, and the run ended in {verdict} ({seen}). "
                "Which invocations does Lambda retry, and which end in the failure queue: one that "
                "returns, or one that raises?")
    if run.kind == "dies" and verdict == Verdict.SILENT_LOSS.value:
        return ("the first attempt died after writing its record, and its retry stood down on "
                "that record. The work is lost and nothing alerts. A copy that finds in_progress "
                "cannot know whether anyone is still at work: how can it end so that Lambda tries "
                "again, and a person hears if nobody finishes?")
    return (f"the run ended in {verdict} ({seen}); expected {' or '.join(EXPECTED[run.kind])}: "
            "one charge, one ledger entry, the record done.")


def run_once(handle: str, scenario: sc.Scenario, copy_at: Any = None) -> sc.Outcome:
    """One upload in a fresh world, through the handle function `handle` (file.py:function);
    with `copy_at` (a Boundary), a second copy starts when the first invocation reaches it."""
    with LocalWorld() as world:
        env = {**world.env("robust"), "HANDLE_FILE": handle}
        runtime = LocalLambda(world, env, fault=sc.fault_of(scenario), retries=scenario.retries,
                              entry=ENTRY)
        event = world.event(world.upload(sc.ORDER_KEY))
        runtime.send(event)
        if copy_at is not None:
            runtime.during(copy_at, lambda: runtime.send_now(event))
        runtime.run()
        return sc.read_outcome(world, runtime, scenario, has_done_state=True)


def check_fix(path: str | Path, function: str = "handle") -> FixReport:
    """Run the handle function in `path` through the runs listed in the module docstring."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no file {path}: write your handler there first")
    handle = f"{path.resolve()}:{function}"
    report = FixReport(handle, unchanged=same_function(path.read_text(encoding="utf-8"), STARTING_HANDLE, function))
    clean = run_once(handle, sc.Scenario("robust"))
    report.runs.append(FixRun("clean", "one delivery, no fault", clean))
    if not report.runs[-1].ok:
        return report  # the other runs would only repeat it
    crossed = [c.boundary for c in clean.trace[0].crossings]
    for place in copy_places(crossed):
        outcome = run_once(handle, sc.Scenario("robust", delivery="concurrent"), copy_at=place)
        report.runs.append(FixRun("copy", f"copy {place}", outcome))
    report.runs.append(FixRun("down once", "provider down on attempt 1",
                              run_once(handle, sc.Scenario("robust", "at_charge", "once"))))
    report.runs.append(FixRun("down always", "provider down on every attempt",
                              run_once(handle, sc.Scenario("robust", "at_charge", "always"))))
    report.runs.append(FixRun("dies", "process dies before the charge",
                              run_once(handle, sc.Scenario("robust", "at_charge", "once", how="crash"))))
    return report


def same_function(source: str, other: str, name: str = "handle") -> bool:
    """True when `source` defines function `name` exactly as `other` does (comments, docstrings
    and layout aside)."""
    def body(text: str) -> str | None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                if (node.body and isinstance(node.body[0], ast.Expr)
                        and isinstance(getattr(node.body[0], "value", None), ast.Constant)
                        and isinstance(node.body[0].value.value, str)):
                    node.body = node.body[1:]  # a docstring is not the code
                return ast.dump(node)
        return None

    mine = body(source)
    return mine is not None and mine == body(other)
