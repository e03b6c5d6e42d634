"""`idem check` as a user runs it, for the tests of how the check runs a handler: the example
handlers' folder, a target in it, the fastest schedule settings, and the CLI with its output caught."""
from __future__ import annotations

import contextlib
import io
from dataclasses import replace
from pathlib import Path
from typing import Any

from idem.cli import main

HANDLERS = Path(__file__).parent / "handlers"
FAST = ("--retries", "0", "--workers", "1")


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def new_breaks(report: Any) -> list[Any]:
    """The report's breaks, less each schedule of the family second_fault whose first-round schedule (the same,
    without its second fault) broke the same way: the second fault added nothing to it."""
    broke = {r.schedule: r.verdict for r in report.broken}

    def first_round(schedule: Any) -> Any:  # with no first fault (FaultPlan(also=...)), the fault-free schedule
        return replace(schedule, fault=None if schedule.fault.at is None else replace(schedule.fault, also=None))
    return [r for r in report.broken if r.schedule.fault is None or r.schedule.fault.also is None
            or broke.get(first_round(r.schedule)) != r.verdict]


def cli(*args: str) -> tuple[int, str, str]:
    """`idem check ARGS`: the exit code, what it printed, what it wrote to stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", *args])
    return code, out.getvalue(), err.getvalue()
