"""The function's own writes, delivered as S3 delivers them (docs/check_from_a_template.md, P23).

An object the function creates in the bucket its trigger watches, at a key the trigger's filter
accepts and by an API whose event type it delivers, is an object created like any upload: S3 sends
the function its event. The check delivers it OWN_WRITE_DELAY seconds after the write and follows a
chain of such writes MAX_DEPTH deep. It keeps which deliveries were the function's own writes, and
what each invocation of the chain charged, so the clean run can be judged one charge per order.

Fed by SQS, the event is one more message in the function's queue, sent OWN_WRITE_DELAY seconds after
the write. A run's messages are one piece of work (`SqsFedLambda.work_of`), so its chain is bounded by
count (MAX_DEPTH for each upload of the batch), and a charge is the own write's when its reference
names the written key (as `idem.explore.run.triggers` tells each upload's charges by their reference).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ...core.events import S3Object
from ...core.clock import iso8601
from ...sim.boundary import unwatched
from ...sim.s3_uploads import UPLOAD_EVENTS
from . import triggers, uploads

#: Seconds from the write to its event: S3 "typically" delivers "in seconds"
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html).
OWN_WRITE_DELAY = 1.0
#: How many writes deep a chain is followed. On AWS it goes on until Lambda's recursive loop
#: detection drops it, after about 16 invocations (`RecursiveInvocationsDropped`:
#: https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html); three show any
#: second charge a chain makes for one order, and keep a looping function's schedules short.
MAX_DEPTH = 3


@dataclass
class OwnWrites:
    """What came back to the function of its own writes, in one run."""

    #: each delivery of an own write: its number (the runtime's; under SQS its message id) -> the key written
    deliveries: dict[int | str, str] = field(default_factory=dict)
    #: how deep in a chain each piece of work is (absent: 0, the check's own upload)
    depth: dict[str, int] = field(default_factory=dict)

    def own(self, delivery: int) -> bool:
        """Whether a delivery is of an object the function wrote itself."""
        return delivery in self.deliveries

    def charges(self, runtime: Any) -> tuple[int, int]:
        """(charges made for the check's own uploads, charges made for the function's own writes)."""
        made = runtime.provider.made_for
        own = sum(n for work, n in made.items() if work in self.depth)
        return sum(made.values()) - own, own

    def written(self, uploads: Iterable[str]) -> set[str]:
        """The keys the function wrote that came back to it, but those of the check's own `uploads`."""
        return set(self.deliveries.values()) - set(uploads)

    def charges_named(self, charges: list[dict[str, Any]], uploads: list[str]) -> tuple[int, int]:
        """`charges` in the provider's record as (those for the check's own uploads, those for the
        function's own writes), the latter by a reference naming a written key no upload has (SQS)."""
        written = self.written(uploads)
        own = sum(1 for item in charges
                  if any(form in str(item.get("reference", "")) for key in written for form in triggers.key_forms(key)))
        return len(charges) - own, own


def delivered(key: str, api: str) -> bool:
    """Whether the function's trigger sends it the event of an object created at `key` by `api`."""
    return uploads.accepts(key, uploads.KEY_PREFIX, uploads.KEY_SUFFIX) and uploads.delivers(api)


def own_key(attempt: Any, deliveries: dict[int | str, str]) -> str | None:
    """The key the function wrote whose event an invocation was of, None for an invocation of the check's
    own uploads: its delivery one of `deliveries` (S3, EventBridge), or every message of its batch (SQS)."""
    messages = getattr(attempt, "messages", None)
    if messages:
        return deliveries[messages[0]] if all(m in deliveries for m in messages) else None
    return deliveries.get(attempt.delivery)


def install(runtime: Any, world: Any, trigger: str) -> OwnWrites:
    """From now on, each object the function creates that its trigger takes comes back to it."""
    kept = OwnWrites()

    def written(visit: Any, api: str, bucket: str, key: str, answer: dict[str, Any]) -> None:
        # under SQS a run is one piece of work: its chain is bounded by its count
        depth = (len(kept.deliveries) // len(triggers.SQS_BATCH) if trigger == "sqs"
                 else kept.depth.get(visit.work, 0)) + 1
        if bucket != world.bucket or depth > MAX_DEPTH or not delivered(key, api):
            return
        version = answer.get("VersionId")
        if trigger == "sqs":  # S3 notifies the queue: one more message, a second after the write
            body = triggers.sqs_body(runtime, world, created(world, key, version, api))
            kept.deliveries[runtime.send_message(body, at=world.clock.now() - world.clock.start + OWN_WRITE_DELAY)] = key
            return

        def deliver() -> None:
            event = triggers.event_for(trigger, world, created(world, key, version, api))
            kept.depth[runtime.work_of(event)] = depth
            kept.deliveries[runtime.send_now(event)] = key

        runtime.at(world.clock.now() - world.clock.start + OWN_WRITE_DELAY, deliver)

    runtime.watch.own_write = written
    if trigger == "sqs":
        runtime.own_messages = kept.deliveries  # their batches are their own work (SqsFedLambda.work_of)
    return kept


def created(world: Any, key: str, version: str | None, api: str) -> S3Object:
    """The object the function created, as S3's event describes it."""
    with unwatched():  # the check's read, not the handler's
        head = world.s3.head_object(Bucket=world.bucket, Key=key, **({"VersionId": version} if version else {}))
    world._uploads += 1  # a sequencer of its own, greater than every earlier one's at this time
    return S3Object(bucket=world.bucket, key=key, size=int(head["ContentLength"]), etag=head["ETag"].strip('"'),
                    sequencer=f"{int(world.clock.now() * 1000):012X}{world._uploads:06X}",
                    version_id=version if world.versioned else None, event_name=UPLOAD_EVENTS[api],
                    event_time=iso8601(world.clock.now()), region=world.s3.meta.region_name)


def note(clean: Any) -> list[str]:
    """The report's note on the clean run's own writes whose invocation failed: no money moved, and
    on AWS each is retried and reaches the failure destination, where a person will find it."""
    failed: dict[str, str] = {}
    for attempt in clean.attempts:
        key = own_key(attempt, clean.own_writes)
        if key is not None and attempt.failed:
            failed.setdefault(key, attempt.error)
    return [f"note: the function wrote {key!r} into the bucket its trigger watches, S3 sent it that object's event "
            f"as for any upload, and the invocation failed ({error.splitlines()[0][:200]}): no money moved, but on "
            "AWS it is retried and reaches the failure destination; write it elsewhere, give the trigger a key "
            "filter that leaves it out, or skip such keys" for key, error in failed.items()]
