"""What every command prints the same way: one-line errors (JSON too under --json) and aligned
columns. Any part of idem may import this; it imports only the standard library and the core's
error root."""
from __future__ import annotations

import json
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
