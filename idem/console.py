"""What every command prints the same way: one-line errors (JSON too under --json), aligned
columns, and long report lines folded to the page at their natural breaks. Any part of idem may
import this; it imports only the standard library and the core's error root."""
from __future__ import annotations

import json
import re
import sys
from typing import Sequence

from .core.errors import IdemError

#: This run asked for --json: errors are printed as JSON on stdout too. Set by `idem.cli.main`.
json_errors = False


class UsageError(IdemError):
    """The command line itself is wrong: an unknown option or choice, a number out of range."""


def fail(message: str) -> int:
    """One clear line on stderr (and a JSON object on stdout under --json); exit code 2."""
    if json_errors:
        print(json.dumps({"error": message}))
    print(f"error: {message}", file=sys.stderr)
    return 2


def choose(option: str, value: str | None, valid: Sequence[str]) -> str | None:
    """An error message when `value` is given and is not one of `valid`, else None."""
    if value is None or value in valid:
        return None
    return f"unknown {option} {value!r}; choose from {', '.join(valid)}"


def align(table: list[list[str]]) -> str:
    """Rows of text cells as aligned columns, with a rule under the header row."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def one_of(name: str, value: str, options: Sequence[str]) -> str:
    """`value` when it is one of `options`; else a ValueError that lists them."""
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; choose one of: {', '.join(options)}")
    return value


#: Where a report line breaks best, tried in order: after a comma or semicolon or before a
#: parenthesis (outside parentheses), then before an arrow, then after a comma inside them, then
#: at any space.
NATURAL_BREAKS = (r"(?<=[,;]) |(?= \()", r"(?= -> )", r"(?<=,) ", r" ")


def _outside_parentheses(text: str, at: int) -> bool:
    return text.count("(", 0, at) == text.count(")", 0, at)


def fold_report(line: str, width: int = 100) -> str:
    """A report line (`stack     idem-demo: CREATE_COMPLETE (...)`) folded to the page at its
    natural breaks, each continuation indented under the text after the line's label."""
    label = re.match(r"[a-z]+ {2,}(?=\S)", line)  # a column label, padded (`stack     `)
    indent = " " * (len(label.group()) if label else 4)
    rows, rest = [], line
    while len(rest) > width:
        cut = next((m.start() for pattern in NATURAL_BREAKS
                    for m in reversed(list(re.finditer(pattern, rest[:width + 1])))
                    if m.start() > len(indent)
                    and (pattern != NATURAL_BREAKS[0] or _outside_parentheses(rest, m.start()))), None)
        if cut is None:
            break
        rows.append(rest[:cut].rstrip())
        rest = indent + rest[cut:].lstrip()
    return "\n".join(rows + [rest])
