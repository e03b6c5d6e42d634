"""Code and text as the chapters show them: syntax-highlighted blocks."""
from __future__ import annotations

import importlib.util
import inspect
import textwrap
from pathlib import Path
from typing import Any

from IPython.display import Markdown


def show_source(*objects: Any) -> Markdown:
    """The real source of idem functions, classes or modules, syntax-highlighted."""
    parts = [textwrap.dedent(inspect.getsource(obj)).rstrip() for obj in objects]
    return Markdown("```python\n" + "\n\n\n".join(parts) + "\n```")


def show_lines(module: str, start: str, end: str = "") -> Markdown:
    """The source of `module` (a dotted name: read from its file, not imported, so a module
    that reads its settings at import shows as well) from the line that starts with `start`
    up to (not including) the line that starts with `end`, or to the end of the file."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ValueError(f"no module {module}")
    lines = Path(spec.origin).read_text(encoding="utf-8").splitlines()
    first = next((n for n, line in enumerate(lines) if line.startswith(start)), None)
    if first is None:
        raise ValueError(f"no line of {module} starts with {start!r}")
    last = next((n for n, line in enumerate(lines[first + 1:], first + 1)
                 if end and line.startswith(end)), len(lines))
    return Markdown("```python\n" + "\n".join(lines[first:last]).rstrip() + "\n```")


def show_text(text: str, language: str = "") -> Markdown:
    """Any text (a template excerpt, a JSON message) as a highlighted block."""
    return Markdown(f"```{language}\n{text.rstrip()}\n```")


WIDTH = 96  # explanations wrap here, to fit the page
#: Why a handler breaks, by verdict: what a schedule with that verdict says about the code.
BREAK_REASONS = {
    "double_charge": "a retry or a copy charged again. The provider cannot tell it is the same "
                     "request: pass it an idempotency key made from the upload, the same on every attempt.",
    "double_effect": "an effect you named happened twice: a retry repeated it after the answer was lost. "
                     "Make that write conditional, so it lands once per charge.",
    "silent_mismatch": "money moved, the books never heard, and nothing alerts. The books can be lost after "
                       "the charge: every attempt that reaches the charge must also reach the books.",
    "silent_loss": "no money moved and nothing alerts. A claim taken before the work stands down forever: "
                   "the retry finds it and skips work that never happened.",
}


def explain_breaks(report: Any) -> str:
    """What a check report (`idem.explore.check.CheckReport`) says about the handler: for each kind of
    break, how often, the smallest schedule it happened in, and what that means."""
    if report.holds:
        return textwrap.fill(f"holds: in all {len(report.results)} schedules every effect happened as "
                             "often as in the clean run, or the failure queue shows what did not.", WIDTH)
    lines = [f"breaks in {len(report.broken)} of {len(report.results)} schedules:"]
    for verdict, n in report.tally().items():
        if verdict not in BREAK_REASONS:
            continue
        smallest = report.smallest(verdict)
        reason = f"- {verdict} ({n}): {BREAK_REASONS[verdict]}"
        lines += [textwrap.fill(reason, WIDTH, subsequent_indent="  "),
                  f"  smallest: {smallest.schedule.label()}"]
    return "\n".join(lines)
