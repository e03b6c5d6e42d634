"""A function that does nothing, for measuring what the local runtime itself costs.

`python -m idem bench` runs it through `LocalLambda` (queue, clock, containers, the
attempt record) and calls it directly: the difference is the runtime's own overhead.
It has the shape the runtime expects of an entry module: `App.from_environment` and
`lambda_handler`.
"""
from __future__ import annotations

from typing import Any


class App:
    @classmethod
    def from_environment(cls, env: Any, **_: Any) -> "App":
        return cls()


_app: App | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    return {"status": "ok"}
