"""The Lambda entry point: `idem.core.entry.lambda_handler`, as template.yaml names it.

Module globals are the container's memory: `_app` is built on a cold start and reused
while the container stays warm. The local runtime loads a fresh copy of this module for
every cold container, so those globals behave exactly as they do on Lambda.
"""
from __future__ import annotations

import json
import os
import uuid
from typing import Any, Callable, Mapping

import boto3

from .clock import Clock, SystemClock
from .errors import ConfigError, RecordsFailed
from .events import EventError, read_event
from .patterns import HAS_DONE_STATE, get_handler
from .handlers.common import Services
from .ledger import Ledger
from .provider import Provider
from .settings import Settings

__all__ = ["App", "ConfigError", "RecordsFailed", "lambda_handler", "make_provider"]

_app: "App | None" = None


def make_provider(settings: Settings, clock: Clock, session: Any = None) -> Provider:
    """The payment provider's client. Here, the workbook's stand-in in its own table;
    in your function, your provider's SDK (Stripe's, say) built from your settings."""
    return Provider((session or boto3).client("dynamodb"), settings.provider_table, clock,
                    retention_seconds=settings.provider_key_retention_seconds)


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
        provider: Any = None,
        new_token: Callable[[], str] | None = None,
        log: Callable[[str], None] = print,
    ) -> "App":
        """Read and check the settings, then build the clients once (at cold start)."""
        settings = Settings.from_env(env)
        clock = clock or SystemClock()
        dynamodb = (session or boto3).client("dynamodb")
        services = Services(
            ledger=Ledger(dynamodb, settings.ledger_table, clock, ttl_seconds=settings.record_ttl_seconds),
            provider=provider or make_provider(settings, clock),
            clock=clock,
            price_cents=settings.price_cents,
            currency=settings.currency,
            recipe=settings.key_recipe,
            provider_key_retention_seconds=settings.provider_key_retention_seconds,
            new_token=new_token or (lambda: uuid.uuid4().hex),
            s3=(session or boto3).client("s3"),
            order_identity=settings.order_identity,
        )
        return cls(settings.handler_mode, services, log)

    @property
    def has_done_state(self) -> bool:
        return self.mode in HAS_DONE_STATE

    def handle(self, event: Any, context: Any) -> dict[str, Any]:
        """Process every record of one event; fail the invocation if any record failed.

        What is charged, skipped or refused is `read_event`'s rule (see idem.core.events):
        a malformed record is logged and skipped, the good ones are still processed, and
        then the invocation fails so the event is retried and reaches the failure queue.
        """
        try:
            batch = read_event(event)
        except EventError as bad:
            self._log("error", f"event rejected: {bad}")
            raise
        if batch.test_event:
            self._log("info", "s3:TestEvent ignored (S3 sends one to SNS and SQS destinations when notifications are configured)")
            return {"status": "test_event", "processed": []}
        if not batch.objects and not batch.skipped:
            self._log("info", "the event holds no records: nothing to do")
        for level, line in batch.log_lines():  # bounded, however many records were skipped
            self._log(level, line)
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
                                + ("Lambda retries the whole event, and naive, which keeps no record, "
                                   "charges the processed ones again" if self.mode == "naive" else
                                   "Lambda retries the whole event; the processed ones are turned away "
                                   "as duplicates"))
        return {"status": "ok", "processed": processed}

    def _log(self, level: str, message: str) -> None:
        self.log(json.dumps({"level": level, "handler": self.mode, "message": message}))


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. The first call in a container builds the App from os.environ."""
    global _app
    if _app is None:
        _app = App.from_environment(os.environ)
    return _app.handle(event, context)
