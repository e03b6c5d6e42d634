"""The package's layers: every import points down the list below, or sideways inside one folder,
and no import closes a circle. Function-level imports count too."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "idem"
#: The layers, bottom first: a module may import from its own layer or any layer before it.
LAYERS = (
    ("__init__",),
    ("core",),
    ("console", "demo_failure"),
    ("sim",),
    ("deploy",),
    ("explore",),
    ("cost",),
    ("lessons",),
    ("views",),
    ("cli",),
    ("__main__",),
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """Every idem module `name` imports, at any depth of its code."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            # `from pkg import sub` imports the submodule `pkg.sub`
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name}
    return found


def layer(name: str) -> str:
    parts = name.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


GRAPH = {name: imports_of(name) for name in MODULES}


def test_every_module_is_in_a_layer():
    assert {layer(n) for n in MODULES} <= set(RANK), "a new folder needs its place in LAYERS"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down_or_sideways(name):
    mine = RANK[layer(name)]
    upward = sorted(t for t in GRAPH[name] if RANK[layer(t)] > mine
                    or (RANK[layer(t)] == mine and layer(t) != layer(name)))
    assert not upward, f"{name} imports from a layer above it or beside it: {upward}"


def test_no_import_closes_a_circle():
    # A package's __init__ importing its own children is not a circle of code: skip those edges.
    def edges(name):
        return {t for t in GRAPH[name] if not t.startswith(name + ".")}

    state: dict[str, int] = {}
    circles = []

    def visit(name, path):
        state[name] = 1
        for target in sorted(edges(name)):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(MODULES):
        if name not in state:
            visit(name, [name])
    assert not circles, f"import circles: {circles}"


def test_the_layer_test_catches_an_upward_import(tmp_path):
    # the checker itself: a core module importing the views is found
    probe = PACKAGE / "core" / "_layer_probe.py"
    probe.write_text("from ..views import tables\n")
    try:
        MODULES["idem.core._layer_probe"] = probe
        found = imports_of("idem.core._layer_probe")
    finally:
        probe.unlink()
        del MODULES["idem.core._layer_probe"]
    assert found == {"idem.views.tables"} and RANK["views"] > RANK["core"]


HEAVY = ("moto", "pandas", "matplotlib", "ipywidgets", "aws_lambda_powertools", "samtranslator")


def test_help_starts_without_moto_pandas_or_matplotlib(tmp_path):
    """`idem --help` and every command's --help, with the heavy packages made unimportable."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {HEAVY!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
        sys.meta_path.insert(0, Block())
    """))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{PACKAGE.parent}"}
    from idem.cli import COMMANDS

    for args in [["--help"]] + [[name, "--help"] for name in COMMANDS]:
        done = subprocess.run([sys.executable, "-m", "idem", *args], capture_output=True, text=True,
                              env=env, timeout=60)
        assert done.returncode == 0, (args, done.stderr[-500:])
        assert "usage:" in done.stdout


#: The size of a room: a newcomer holds one module, and one folder's list of modules, in their head.
MODULE_LINES_LIMIT = 600
FOLDER_MODULES_LIMIT = 16


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_600_lines(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MODULE_LINES_LIMIT, (
        f"{MODULES[name].relative_to(PACKAGE.parent)} has {lines} lines: split it along its own seams")


def test_no_folder_holds_more_than_16_modules():
    crowded = {str(folder.relative_to(PACKAGE.parent)): count
               for folder in [PACKAGE, *sorted(p for p in PACKAGE.rglob("*") if p.is_dir())]
               if (count := len(list(folder.glob("*.py")))) > FOLDER_MODULES_LIMIT}
    assert not crowded, f"folders with more than {FOLDER_MODULES_LIMIT} modules: {crowded}"


def test_every_folder_says_its_one_job():
    silent = [str(init.relative_to(PACKAGE.parent)) for init in sorted(PACKAGE.rglob("__init__.py"))
              if ast.get_docstring(ast.parse(init.read_text())) is None]
    assert not silent, f"packages whose __init__ has no docstring saying its job: {silent}"
