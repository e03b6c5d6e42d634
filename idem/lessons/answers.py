"""The unfilled state of an exercise, one rule for every chapter.

Every exercise cell starts empty: a value of `None` or `...`, or a function whose body is `...`
(or `return None`). Its checker calls `unfilled` first and, while the answer is still empty,
answers with `not_yet`: what to fill in, never the answer or the rule that gives it.
"""
from __future__ import annotations

import textwrap
from typing import Any, Iterable

EMPTY_VALUES = (None, Ellipsis)


def unfilled(value: Any) -> bool:
    """True for the starting state of an exercise: None, `...`, or a dict whose values all are."""
    if isinstance(value, dict):
        return bool(value) and all(unfilled(v) for v in value.values())
    return any(value is empty for empty in EMPTY_VALUES)


def all_unfilled(values: Iterable[Any]) -> bool:
    values = list(values)
    return bool(values) and all(unfilled(v) for v in values)


def not_yet(what: str, hint: str = "") -> str:
    """The checker's answer to an empty exercise: what to fill in (and, rarely, where to look;
    never a rule that gives the answer away)."""
    return f"No answer yet: {what}. {hint}".rstrip()


PAGE = 100  # a checker's line fits the page, as every printed line of the book does


def folded(text: str) -> str:
    """A checker's answer with each line folded to the page; a continuation hangs two spaces
    further in than its line (an indented reason stays under its heading)."""
    def fold(line: str) -> str:
        indent = line[:len(line) - len(line.lstrip())]
        return textwrap.fill(line, PAGE, subsequent_indent=indent + "  ") if line.strip() else line
    return "\n".join(fold(line) for line in text.splitlines())
