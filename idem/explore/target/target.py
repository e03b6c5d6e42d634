"""The handler `idem check` is given: `module:function` (a dotted module or a .py file), or one of
the workbook's own patterns, found before anything runs."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckInputError

#: The workbook's own patterns, checked through the real entry point.
PATTERNS = ("naive", "claim_first", "robust", "keyed")
PATTERN_ENTRY = "idem.core.entry:lambda_handler"
#: What the handler's provider factory returns: the stand-in, or Stripe's SDK over a loopback Stripe.
PROVIDERS = ("stand-in", "stripe")


@dataclass(frozen=True)
class Target:
    """A handler to check: `module:function`, a module by dotted name or a .py file."""

    module: str  # what the runtime loads: a dotted name, or the file's absolute path
    function: str
    env: tuple[tuple[str, str], ...] = ()
    given: str = ""  # the target as the reader named it, for what the report prints
    provider: str = "stand-in"  # what its provider factory returns: one of PROVIDERS
    deployed: Any = None  # its settings as its template deploys it (`idem.explore.target.deployed.Deployed`)

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def name(self) -> str:
        return self.given or self.spec


def resolve(target: str, env: dict[str, str] | None = None) -> Target:
    """The handler named by `target`, checked for existence before anything runs."""
    env, given = dict(env or {}), target
    if target in PATTERNS:
        env.setdefault("HANDLER_MODE", target)
        target = PATTERN_ENTRY
    module, sep, function = target.rpartition(":")
    if not sep or not module or not function:
        raise CheckInputError(f"{target!r} is not MODULE:FUNCTION (for example my_function:lambda_handler, "
                              f"or one of {', '.join(PATTERNS)})")
    if module.endswith(".py"):
        if not Path(module).is_file():
            raise CheckInputError(f"no file {module}: give the path to your handler's .py file")
        module = str(Path(module).resolve())
        spec = importlib.util.spec_from_file_location(Path(module).stem, module)
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError) as error:
            raise CheckInputError(f"cannot find module {module}: {error}") from None
        if spec is None:
            raise CheckInputError(f"cannot find module {module}: is it on PYTHONPATH (run from its folder)?")
    source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    if f"def {function}(" not in source and f"{function} =" not in source:
        raise CheckInputError(f"{module} defines no {function}: name the function Lambda calls "
                              "(its Handler setting, e.g. lambda_handler)")
    return Target(module, function, tuple(sorted(env.items())), given)

