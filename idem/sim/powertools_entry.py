"""The `powertools` pattern as a Lambda entry point: the same charge, guarded by Powertools.

Powertools for AWS Lambda's idempotency utility wraps the charge (the provider call and
the ledger entry, exactly as the other handlers make them) in `idempotent_function`,
keyed by a JMESPath expression over the decoded S3 record. Its records live in their own
DynamoDB table (`IDEMPOTENCY_TABLE`), written through the function's DynamoDB client, so the
runtime sees (and can fail) those calls at the same boundaries as the ledger's.

The wiring is `idem.core.entry.App` with the handler swapped, so the local runtime loads this
module exactly as it loads `idem.core.entry`: a fresh copy per cold container, which gives each
container its own persistence layer (and its own local cache, when enabled).

Settings (environment):
- IDEMPOTENCY_TABLE: the Powertools table (partition key `id`, TTL attribute `expiration`);
- RECORD_TTL_SECONDS: `expires_after_seconds` (a day, as for the ledger's records);
- POWERTOOLS_KEY: the key's JMESPath over the record (`[bucket, key, version_id]`);
- POWERTOOLS_VALIDATE: a JMESPath for payload validation (off when empty);
- POWERTOOLS_LOCAL_CACHE: `1` to keep completed records in the container's memory;
- POWERTOOLS_RAISE_ON_MISSING_KEY: `0` to let a record without a key through unguarded;
- POWERTOOLS_FIX: `none`, `catch` (finish the books when an error follows the charge),
  `provider_key` (pass the key to the provider from inside the idempotent function) or
  `book_once` (pass the key to the provider, and book the charge with a conditional put of
  one ledger line per key, so a function run again books nothing new).
"""
from __future__ import annotations

import contextlib
import datetime
import importlib
import os
import threading
import types
import warnings
from typing import Any, Iterator, Mapping

import boto3
from botocore.exceptions import ClientError
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from ..core import entry as core
from ..core import settings
from ..core.dynamo import to_item
from ..core.clock import Clock, SystemClock
from ..core.events import S3Object
from ..core.handlers.common import Services, charge_step, order_for, receipt
from ..core.settings import DAY

MODE = "powertools"
KEY_JMESPATH = "[bucket, key, version_id]"
FIXES = ("none", "catch", "provider_key", "book_once")
#: The Powertools modules that read the wall clock (all through `datetime as dt`).
TIME_MODULES = tuple(f"aws_lambda_powertools.utilities.idempotency.{name}" for name in (
    "base", "persistence.base", "persistence.datarecord", "persistence.dynamodb"))


class _ClockDatetime(datetime.datetime):
    """datetime.datetime, but `now()` on the clock of the innermost live `powertools_time`."""

    @classmethod
    def now(cls, tz: Any = None) -> datetime.datetime:  # type: ignore[override]
        clock = _live_clock()
        if clock is None:  # nothing live: the wall clock (or what the runtime's clocks read)
            return datetime.datetime.now(tz)
        return datetime.datetime.fromtimestamp(clock.now(), tz or datetime.timezone.utc)


#: What Powertools' modules read as `dt` while a virtual clock is in use: one shim, for good.
_SHIM = types.ModuleType("datetime")
_SHIM.__dict__.update(vars(datetime))
_SHIM.datetime = _ClockDatetime  # type: ignore[attr-defined]
#: Each `powertools_time` entered and not left yet: (token, clock, the thread that entered it).
_ENTERED: list[tuple[object, Clock, threading.Thread]] = []
_GUARD = threading.Lock()


def _parked(thread: threading.Thread) -> bool:
    """An invocation thread the runtime parked at a crash (idem.sim.runtime.invocation_thread._Run.die): it never
    runs again, so the `with` it is inside never exits."""
    from .runtime import invocation_thread  # here: the runtime imports the handlers' entry points

    return thread in invocation_thread._parked or not thread.is_alive()


def _live_clock() -> Clock | None:
    for _, clock, thread in reversed(list(_ENTERED)):
        if not _parked(thread):
            return clock
    return None


@contextlib.contextmanager
def powertools_time(clock: Clock) -> Iterator[None]:
    """Make Powertools read `clock` instead of the wall clock, and restore it afterwards.

    A no-op for the system clock: on AWS, Powertools reads real time as it always does.
    Robust to an invocation that never leaves it: a crash parks the invocation's thread inside
    the `with` for good (idem.sim.runtime.invocation_thread._Run), so what is entered is kept in `_ENTERED` and
    an entry of a parked thread is ignored and dropped; the last live one to leave puts
    Powertools' own `datetime` back.
    """
    if isinstance(clock, SystemClock):
        yield
        return
    modules = [importlib.import_module(name) for name in TIME_MODULES]
    token = object()
    with _GUARD:
        _ENTERED[:] = [e for e in _ENTERED if not _parked(e[2])]
        _ENTERED.append((token, clock, threading.current_thread()))
        for module in modules:
            module.dt = _SHIM  # type: ignore[attr-defined]
    try:
        yield
    finally:
        with _GUARD:
            _ENTERED[:] = [e for e in _ENTERED if e[0] is not token and not _parked(e[2])]
            if not _ENTERED:
                for module in modules:
                    module.dt = datetime  # type: ignore[attr-defined]  # as Powertools imports it


def mark_replayed(response: Any, record: DataRecord) -> Any:
    """Powertools' response hook: a replayed result says it is a duplicate, as keyed's does."""
    return {**(response or {}), "status": "duplicate"}


class PowertoolsCharge:
    """`handle(obj, services, context)` for the powertools pattern, one per container."""

    def __init__(self, env: Mapping[str, str], client: Any) -> None:
        self.fix = settings.one_of(env, "POWERTOOLS_FIX", "none", FIXES)
        self.config = IdempotencyConfig(
            event_key_jmespath=env.get("POWERTOOLS_KEY", KEY_JMESPATH) or KEY_JMESPATH,
            payload_validation_jmespath=env.get("POWERTOOLS_VALIDATE", ""),
            raise_on_no_idempotency_key=settings.flag(env, "POWERTOOLS_RAISE_ON_MISSING_KEY", True),
            expires_after_seconds=settings.whole_number(env, "RECORD_TTL_SECONDS", DAY, minimum=1),
            use_local_cache=settings.flag(env, "POWERTOOLS_LOCAL_CACHE", False),
            response_hook=mark_replayed,
        )
        self.persistence = DynamoDBPersistenceLayer(
            table_name=settings.required(env, "IDEMPOTENCY_TABLE"), boto3_client=client)
        self.charge_once = idempotent_function(
            self._charge, data_keyword_argument="obj", config=self.config,
            persistence_store=self.persistence, key_prefix="charge")

    def __call__(self, obj: S3Object, svc: Services, context: Any) -> dict[str, Any]:
        self.config.register_lambda_context(context)  # in-progress expiry = this deadline
        return self.charge_once(obj=obj, svc=svc)  # Powertools hashes the S3Object's fields

    def _charge(self, obj: S3Object, svc: Services) -> dict[str, Any]:
        """The idempotent function: the charge and the ledger entry, as in every handler."""
        order = order_for(obj, svc)
        if self.fix == "catch":
            return self.charge_then_catch(order, svc)
        if self.fix == "book_once":
            return self.charge_and_book_once(order, svc)
        provider_key = order.key if self.fix == "provider_key" else None
        charge = charge_step(svc, order, idempotency_key=provider_key)
        svc.ledger.add_entry(order.account, order.amount_cents)
        return receipt(charge)

    def charge_then_catch(self, order: Any, svc: Services) -> dict[str, Any]:
        """Once the charge has returned, no exception may reach Powertools: it would delete
        the record. An error from the charge call itself cannot be caught safely: the
        function cannot tell whether money moved, which is the gap only a provider key closes."""
        charge = charge_step(svc, order)
        try:
            svc.ledger.add_entry(order.account, order.amount_cents)
        except Exception as error:  # money moved: keep the record, let reconciliation book it
            return {**receipt(charge), "note": f"the ledger entry failed after the charge: {error}"}
        return receipt(charge)


    def charge_and_book_once(self, order: Any, svc: Services) -> dict[str, Any]:
        """Both steps made safe to run again. The provider replays a charge for a key it has
        seen. The ledger line is one item per key, put only if absent: when Powertools has
        deleted its record after an error and the function runs again, the put finds the line
        and books nothing new."""
        charge = charge_step(svc, order, idempotency_key=order.key)
        line = {"pk": order.key, "status": "done", "source": order.source, "account": order.account,
                "cents": order.amount_cents, "charge_id": charge.id, "booked_at": svc.clock.now()}
        try:
            svc.ledger.client.put_item(TableName=svc.ledger.table, Item=to_item(line),
                                       ConditionExpression="attribute_not_exists(pk)")
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise  # booked already by an earlier run of this function: nothing to do
        return receipt(charge)


class App(core.App):
    """`idem.core.entry.App` with the powertools pattern as its handler."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str], *, session: Any = None,
                         **options: Any) -> "App":
        # HANDLER_MODE names this entry's pattern; the core App only needs a valid one to wire up.
        app = super().from_environment({**env, "HANDLER_MODE": "keyed"}, session=session, **options)
        app.mode = MODE
        app.handler = PowertoolsCharge(env, (session or boto3).client("dynamodb"))
        return app  # type: ignore[return-value]

    @property
    def has_done_state(self) -> bool:
        return True

    def handle(self, event: Any, context: Any) -> dict[str, Any]:
        """The core App's handling, on the App's clock, with Powertools' warnings logged
        as log lines (where CloudWatch would show them) rather than printed."""
        with powertools_time(self.services.clock), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return super().handle(event, context)
            finally:
                for warning in caught:
                    self._log("warning", str(warning.message))


_app: App | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. The first call in a container builds the App from os.environ."""
    global _app
    if _app is None:
        _app = App.from_environment(os.environ)
    return _app.handle(event, context)

