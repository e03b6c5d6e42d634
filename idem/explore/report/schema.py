"""The JSON schema `idem check --json` follows (check-report.schema.json, shipped in the package), and
its error shape, read without importing the check (and moto)."""
from __future__ import annotations

import json
from importlib import resources
from typing import Any


def schema() -> dict[str, Any]:
    """The JSON schema `--json` follows, as shipped in the package."""
    text = resources.files("idem.explore.report").joinpath("check-report.schema.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def schema_version() -> int:
    return int(schema()["properties"]["schema_version"]["const"])


def error_json(exit_code: int, message: str, handler_traceback: str = "") -> dict[str, Any]:
    """The error shape of the schema, made without importing the check (and moto)."""
    return {"schema_version": schema_version(), "exit_code": exit_code, "error": message,
            "handler_traceback": handler_traceback or None}
