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
