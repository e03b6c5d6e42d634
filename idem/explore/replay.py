"""Replay a captured event through the local runtime, on fresh moto resources.

The event goes to the function exactly as Lambda would hand it over, whatever it holds:
the function decides what to charge, skip or refuse, and the replay reports what it did.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..core.events import EventBatch, EventError, S3Object, Skipped, read_event
from ..core.handlers.common import account_of
from ..core.keys import idempotency_key
from ..sim.runtime import Attempt, LocalLambda
from ..sim.world import LocalWorld, demo_account
from .scenarios import Scenario, handler_names as known
from ..core.handlers.keyed_orders import Upload
from ..core.handlers.keyed_events import event_epoch

#: How many times one replay may deliver the event (each delivery is a full invocation).
MAX_DELIVERIES = 10
DELIVERY_GAP = 5.0  # seconds on the virtual clock between S3's copies of the event

#: What the function did with the event: charged something, charged nothing on purpose,
#: or refused it (the invocation failed: retried, then the failure queue).
STATUSES = ("processed", "ignored", "rejected")


@dataclass
class Replay:
    """The outcome of one replay: one row per object, and what was skipped and why."""

    handler: str
    deliveries: int
    status: str  # one of STATUSES
    reason: str  # why it was ignored or rejected ("" when processed)
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    attempts: int = 0
    failed_attempts: int = 0
    dlq: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for `--json`; a rejected replay carries its reason as `error`."""
        data = dataclasses.asdict(self)
        data["skipped"] = [{"record": s.index, "reason": s.reason, "malformed": s.malformed}
                           for s in self.skipped]
        if self.status == "rejected":
            data["error"] = self.reason
        return data


def handler_names() -> tuple[str, ...]:
    """Every handler `sim` knows (powertools too, when it is installed)."""
    return known()


def replay(event: Any, handler: str = "keyed", deliveries: int = 1) -> Replay:
    """Deliver `event` `deliveries` times, one after the other, and report what happened.

    The function never reads the objects, so the bucket named in the event need not
    exist here: only the ledger, provider and failure queue are created fresh.
    """
    if handler not in handler_names():
        raise ValueError(f"unknown handler {handler!r}; choose from {', '.join(handler_names())}")
    if not 1 <= deliveries <= MAX_DELIVERIES:
        raise ValueError(f"deliveries must be 1 to {MAX_DELIVERIES}, got {deliveries}")
    try:
        batch, refusal = read_event(event), ""
    except EventError as problem:
        batch, refusal = EventBatch(), str(problem)
    with LocalWorld(prefix="replay") as world, _function(world, handler) as (runtime, record_of):
        for obj in batch.objects:  # onboarded: each account is linked to a customer (idem.core.customers)
            world.link_demo_account(demo_account(obj.key))
        for n in range(deliveries):
            runtime.send(event, at=n * DELIVERY_GAP)
        runtime.run()
        status, reason = _verdict(batch, refusal, runtime.attempts)
        provider = world.provider()
        rows = [{"object": obj.uri, "account": account_for(obj, handler),
                 "charges": charges_for(provider, obj, handler), "record": record_of(obj)}
                for obj in dict.fromkeys(batch.objects)]  # an upload named twice is one row
        return Replay(handler, deliveries, status, reason, rows, batch.skipped,
                      attempts=len(runtime.attempts),
                      failed_attempts=sum(a.failed for a in runtime.attempts),
                      dlq=world.failure_queue_depth())


def account_for(obj: S3Object, handler: str) -> str:
    """Who the handler makes pay: keyed reads the key's folder and parks a key with none ("none")."""
    if handler == "keyed":
        return _keyed_upload(obj).account or "none (parked)"
    return account_of(obj.key)


def charges_for(provider: Any, obj: S3Object, handler: str) -> int:
    """The charges the provider made for this upload. keyed sends a key per upload, so two
    uploads of one name without versioning (the same reference) are counted apart by it;
    the other handlers send no key, so their charges can only be counted per object name."""
    found = provider.charges(reference=obj.uri)
    if handler != "keyed":
        return len(found)
    key = _keyed_upload(obj).idempotency_key
    return sum(c.idempotency_key == key for c in found)


def _keyed_upload(obj: S3Object) -> Any:
    return Upload(obj.bucket, obj.key, obj.version_id, obj.etag, obj.sequencer, event_epoch(obj.event_time))


def _verdict(batch: EventBatch, refusal: str, attempts: list[Attempt]) -> tuple[str, str]:
    """processed, ignored or rejected, and the reason, as the function's own rules say."""
    if refusal:
        return "rejected", refusal
    if batch.malformed:
        first, more = batch.malformed[0], len(batch.malformed) - 1
        return "rejected", (f"record {first.index}: {first.reason}"
                            + (f" (and {more} more malformed)" if more else ""))
    failed = [a for a in attempts if a.failed]
    if failed:
        return "rejected", f"the function failed: {failed[0].error}"
    if batch.test_event:
        return "ignored", ("s3:TestEvent: S3 sends this when a bucket's notifications are "
                           "configured; there is nothing to charge")
    if not batch.objects:
        reasons = "; ".join(dict.fromkeys(s.reason for s in batch.skipped[:5]))
        return "ignored", f"no upload to charge ({reasons or 'the event holds no records'})"
    return "processed", ""


@contextlib.contextmanager
def _function(world: LocalWorld, handler: str) -> Iterator[tuple[LocalLambda, Callable[[S3Object], str]]]:
    """The function under `handler`, and how to read an object's record status back."""
    if handler == "powertools":
        with _powertools(world) as found:
            yield found
        return
    # The replayed event names objects this fresh world does not hold: keyed keys each upload by
    # itself (ORDER_IDENTITY=upload) instead of reading an order file that is not there.
    runtime = LocalLambda(world, world.env(handler, ORDER_IDENTITY="upload"))
    ledger = world.ledger()

    def record_of(obj: S3Object) -> str:
        key = _keyed_upload(obj).idempotency_key if handler == "keyed" else idempotency_key(obj)
        record = ledger.get_record(key)  # keyed's key tells uploads of one name apart
        return str(record.status) if record else "-"

    yield runtime, record_of


@contextlib.contextmanager
def _powertools(world: LocalWorld) -> Iterator[tuple[LocalLambda, Callable[[S3Object], str]]]:
    """The powertools handler on its own table; records read back with Powertools' own key."""
    # optional: Powertools is needed only when its handler is replayed
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemNotFoundError

    from ..sim.powertools_entry import KEY_JMESPATH, powertools_time
    from . import powertools as pt

    scenario = Scenario(pt.MODE)
    with pt.idempotency_table(world) as table:
        runtime = pt.runtime_for(world, pt.env_for(world, scenario, table), scenario)
        layer = DynamoDBPersistenceLayer(table_name=table, boto3_client=world.dynamodb)
        layer.configure(IdempotencyConfig(event_key_jmespath=KEY_JMESPATH), key_prefix="charge")

        def record_of(obj: S3Object) -> str:
            with powertools_time(world.clock):  # expiry is read on the clock it was written on
                try:
                    found = layer.get_record(dataclasses.asdict(obj))
                except IdempotencyItemNotFoundError:
                    return "-"
                status = found.status if found else "-"
            return pt.RECORD_STATUS.get(status, status.lower())

        yield runtime, record_of
