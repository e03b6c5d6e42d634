"""Shared fixtures: a fresh local AWS (moto) per test, never real AWS."""
from __future__ import annotations

import os

import pytest

# Belt and braces: even a bug that skipped moto could not find real credentials.
for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(name, None)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture
def world():
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="test") as w:
        yield w


# -- `make test-load`: the concurrency tests, IDEM_LOAD_RUNS passes in a row, in one process ---------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """With IDEM_LOAD_RUNS=N, every test marked `concurrency` runs N times (ids `load-1`...)."""
    runs = int(os.environ.get("IDEM_LOAD_RUNS") or 0)
    if runs > 0 and metafunc.definition.get_closest_marker("concurrency"):
        metafunc.fixturenames.append("load_run")
        metafunc.parametrize("load_run", [pytest.param(n, id=f"load-{n}") for n in range(1, runs + 1)])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole passes in a row: every test's first run, then every test's second, and so on."""
    if int(os.environ.get("IDEM_LOAD_RUNS") or 0) > 0:
        items.sort(key=lambda item: item.callspec.params.get("load_run", 0) if hasattr(item, "callspec") else 0)
