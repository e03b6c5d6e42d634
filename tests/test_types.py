"""The code that ships is held to a type checker and a linter (configured in pyproject.toml),
and the package says it is typed (PEP 561's py.typed, shipped as package data)."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_strict_passes_on_the_core():
    # the handler's shipped tests are checked where they run, in an empty folder beside the copied
    # files (tests/test_keyed_shipped.py): here their imports of the copied names do not resolve
    result = run("mypy", "--strict", "--exclude", r"idem/core/handlers/test_keyed\.py$", "idem/core")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_ruff_is_clean_on_the_package_and_the_tests():
    result = run("ruff", "check", "idem", "tests", "tools")
    assert result.returncode == 0, result.stdout[-3000:]


def test_the_package_ships_py_typed():
    assert (ROOT / "idem" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["idem"]
    assert config["tool"]["mypy"]["strict"] is True
