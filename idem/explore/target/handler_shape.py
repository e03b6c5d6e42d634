"""What Lambda's Python runtime cannot call: a handler that is a coroutine or a generator, read
from its source (not run), and why it is refused (exit 2)."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path


def source_tree(module: str) -> ast.Module | None:
    """The handler's module (a .py file, or a dotted name found on sys.path) parsed, not run; None
    where it cannot be found or parsed (the check's load says what is wrong with it)."""
    path: str | None = module if module.endswith(".py") else None
    if path is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec else None
    return parsed(Path(path)) if path else None


def parsed(path: Path) -> ast.Module | None:
    """The Python source at `path` parsed, read as bytes so a PEP 263 coding line is honoured as
    Python honours it; None where it cannot be read or parsed."""
    try:
        return ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def handler_shape(target: str) -> str:
    """"" for a plain function, or what calling it returns instead of a value: "coroutine" (async
    def), "generator" (a def with yield) or "async generator". Read from the source, not run."""
    module, _, function = target.rpartition(":")
    tree = source_tree(module)
    if tree is None:
        return ""  # the check itself says what is wrong with it
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            yields = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node))
            if isinstance(node, ast.AsyncFunctionDef):
                return "async generator" if yields else "coroutine"
            return "generator" if yields else ""
    return ""


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of functions or classes defined inside it."""
    found, todo = [], list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def refuse_shape(target: str, shape: str) -> str:
    """Why Lambda cannot run a handler of this shape (exit 2)."""
    # Lambda's Python runtime calls the handler and JSON-encodes what it returns; anything json
    # cannot encode fails the invocation with Runtime.MarshalError ("Unable to marshal response:
    # Object of type coroutine is not JSON serializable"): awslambdaric's bootstrap and
    # lambda_runtime_exception.py, https://github.com/aws/aws-lambda-python-runtime-interface-client
    kind = {"coroutine": "an async def", "generator": "a generator (a def with yield)",
            "async generator": "an async generator"}[shape]
    fix = ("Lambda's Python runtime awaits nothing: call it from a plain def, as in "
           "def lambda_handler(event, context): return asyncio.run(handle(event, context))"
           if shape != "generator" else "return a list instead of yielding")
    return (f"{target} is {kind}: Lambda's Python runtime calls it and gets a {shape} object back, which "
            f"it cannot return (Runtime.MarshalError: Unable to marshal response: Object of type "
            f"{shape.replace(' ', '_')} is not JSON serializable), so its body never runs, on every "
            f"invocation; {fix}")
