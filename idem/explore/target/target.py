"""The handler `idem check` is given: `module:function` (a dotted module or a .py file), or one of
the workbook's own patterns, found before anything runs."""
from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckInputError
from .handler_shape import parsed

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
    if spec and spec.origin and binds(Path(spec.origin), function) is False:
        raise CheckInputError(f"{module} defines no {function}: name the function Lambda calls "
                              "(its Handler setting, e.g. lambda_handler)")
    return Target(module, function, tuple(sorted(env.items())), given)


def binds(path: Path, name: str) -> bool | None:
    """Whether the module at `path` binds `name` at its top level, read from its source (as bytes, so
    a PEP 263 coding line is honoured as Python honours it): a def, async def or class, an assignment
    (tuple, annotated and augmented ones too), an import and its `as` name, or a `global` declaration
    in a function. None when the source cannot tell: it does not parse or decode, is not Python
    source, or imports `*`; the load that follows says what is wrong, if anything."""
    tree = parsed(path)
    if tree is None:
        return None
    found: set[str] = set()
    for node in tree.body:
        found.update(_bound_by(node))
    found.update(n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names)
    if name in found:
        return True
    return None if "*" in found else False  # from x import *: any name, for all the source says


def _bound_by(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (those of the blocks of an if, try, with, for or while
    too: a module binds a name in any branch it may take)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    names |= {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)}
    for block in ("body", "orelse", "finalbody", "handlers"):
        for inner in getattr(node, block, []) if not isinstance(node, ast.ClassDef) else []:
            if isinstance(inner, ast.ExceptHandler):
                names |= {inner.name} if inner.name else set()
                names |= set().union(*(_bound_by(s) for s in inner.body))
            else:
                names |= _bound_by(inner)
    return names
