"""The unfilled state of an exercise, one rule for every chapter.

Every exercise cell starts empty: a value of `None` or `...`, or a function whose body is `...`
(or `return None`). Its checker calls `unfilled` first and, while the answer is still empty,
answers with `not_yet`: what to fill in, never the answer or the rule that gives it.
"""
from __future__ import annotations

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
