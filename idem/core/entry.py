"""The Lambda entry point: `idem.core.entry.lambda_handler`, as template.yaml names it.

Module globals are the container's memory: `_app` is built on a cold start and reused
while the container stays warm, and `_CONTAINER_MEMORY` is where the `memory` fault store
keeps its counts. The local runtime loads a fresh copy of this module for every cold
container, so those globals behave exactly as they do on Lambda.
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Callable, Mapping

import boto3

from .clock import Clock, SystemClock
from .events import EventError, read_event
from ..local.faults import FaultInjector, FaultPlan, exit_process
from .handlers import HAS_DONE_STATE, get_handler
from .handlers.common import Services, no_checkpoint
from .ledger import DAY, Ledger
from .provider import Provider

_CONTAINER_MEMORY: dict[str, int] = {}
_app: "App | None" = None


class ConfigError(RuntimeError):
    """The function's environment is missing a setting or has a bad one."""


class RecordsFailed(RuntimeError):
    """Some records of the event failed; the rest were processed and will dedupe on retry."""


def _setting(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"{name} is not set: template.yaml sets it on the function; "
                          "locally, LocalWorld.env() provides it")
    return value


def _int_setting(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name) or str(default)
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


class App:
    """One container's wiring: a handler pattern and the services it uses."""

    def __init__(self, mode: str, services: Services, log: Callable[[str], None] = print) -> None:
        self.mode = mode
        self.handler = get_handler(mode)
        self.services = services
        self.log = log

    @classmethod
    def from_environment(
        cls,
        env: Mapping[str, str],
        *,
        session: Any = None,
        clock: Clock | None = None,
        checkpoint: Callable[[str], None] = no_checkpoint,
        new_token: Callable[[], str] | None = None,
        crash: Callable[[], None] = exit_process,
        log: Callable[[str], None] = print,
    ) -> "App":
        clock = clock or SystemClock()
        dynamodb = (session or boto3).client("dynamodb")
        ledger_table = _setting(env, "LEDGER_TABLE")
        try:
            plan = FaultPlan.from_env(env)
            mode = env.get("HANDLER_MODE", "keyed")
            get_handler(mode)
        except ValueError as bad:
            raise ConfigError(str(bad)) from None
        services = Services(
            ledger=Ledger(dynamodb, ledger_table, clock,
                          ttl_seconds=_int_setting(env, "RECORD_TTL_SECONDS", DAY)),
            provider=Provider(dynamodb, _setting(env, "PROVIDER_TABLE"), clock),
            faults=FaultInjector(plan, dynamodb, ledger_table, _CONTAINER_MEMORY, crash),
            clock=clock,
            price_cents=_int_setting(env, "PRICE_CENTS", 500),
            recipe=env.get("KEY_RECIPE", "version") or "version",
            new_token=new_token or (lambda: uuid.uuid4().hex),
            checkpoint=checkpoint,
        )
        return cls(mode, services, log)

    @property
    def has_done_state(self) -> bool:
        return self.mode in HAS_DONE_STATE

    def handle(self, event: Any, context: Any) -> dict[str, Any]:
        """Process every record of one event; fail the invocation if any record failed."""
        try:
            batch = read_event(event)
        except EventError as bad:
            self._log("error", f"event rejected: {bad}")
            raise
        if batch.test_event:
            self._log("info", "s3:TestEvent ignored (S3 sends one when notifications are configured)")
            return {"status": "test_event", "processed": []}
        for skipped in batch.skipped:
            level = "error" if skipped.malformed else "info"
            self._log(level, f"record {skipped.index} skipped: {skipped.reason}")
        processed, failures = [], []
        for obj in batch.objects:
            try:
                processed.append({"object": obj.uri, **self.handler(obj, self.services, context)})
            except Exception as error:  # one bad record must not cost the others their turn
                self._log("error", f"{obj.uri} failed: {type(error).__name__}: {error}")
                failures.append(error)
        if len(failures) == 1 and not batch.malformed:
            raise failures[0]
        if failures or batch.malformed:
            raise RecordsFailed(f"{len(failures)} record(s) failed and {len(batch.malformed)} "
                                f"malformed of {len(batch.objects) + len(batch.skipped)}; "
                                "the processed ones will be recognised as duplicates on retry")
        return {"status": "ok", "processed": processed}

    def _log(self, level: str, message: str) -> None:
        self.log(json.dumps({"level": level, "handler": self.mode, "message": message}))


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. The first call in a container builds the App from os.environ."""
    global _app
    if _app is None:
        _app = App.from_environment(os.environ)
    return _app.handle(event, context)
