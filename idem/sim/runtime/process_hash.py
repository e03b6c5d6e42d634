"""Python's `hash()` as each execution environment has its own.

Each Lambda execution environment is its own process
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), and the hash of a str,
bytes or datetime is "salted with an unpredictable random value ... constant within an individual
Python process, ... not predictable between repeated invocations of Python"
(https://docs.python.org/3/reference/datamodel.html#object.__hash__; PYTHONHASHSEED is not set on
Lambda). The local runtime runs every environment in one process, so a key made with `hash(name)`
would be the same in all of them, and a handler keyed so would hold where Lambda charges twice.
`environment_builtins(salt)` is the builtins a cold start's module sees: the same, but a `hash()`
salted per environment for the values Python salts (numbers, None and tuples of them are not salted,
in Python or here), so two environments give one name two hashes, as Lambda's do.
"""
from __future__ import annotations

import builtins
from typing import Any

_PLAIN = (int, float, complex, bool, type(None))


def _salted_in_python(value: Any) -> bool:
    """Whether Python's own hash of `value` changes from process to process: a str, bytes or datetime,
    a tuple or frozenset holding one, or an object hashed by identity or by its own __hash__ (which
    may read either). Numbers, None and tuples of them hash the same everywhere."""
    if isinstance(value, _PLAIN):
        return False
    if isinstance(value, (tuple, frozenset)):
        return any(_salted_in_python(item) for item in value)
    return True


def environment_hash(salt: str) -> Any:
    """`hash()` for one execution environment: Python's own for unsalted values, else a hash that
    differs with `salt` (stable within the environment, as the real one is within a process)."""
    real = builtins.hash

    def hash(value: Any, /) -> int:  # noqa: A001 - the builtin it stands for
        if not _salted_in_python(value):
            return real(value)
        return real((salt, value))

    hash.__doc__ = real.__doc__
    return hash


def environment_builtins(salt: str) -> dict[str, Any]:
    """The builtins of a module loaded in one execution environment: Python's, with that
    environment's `hash()`."""
    own = dict(vars(builtins))
    own["hash"] = environment_hash(salt)
    return own

