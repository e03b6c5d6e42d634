"""The SQS trigger's wider world (`idem check --trigger sqs`): its delays as ranges, and the
families where time and accounts matter (`idem.explore.families.timed` holds them for S3 and EventBridge).

The ranges (in `idem.explore.families.timings`), each end a schedule of its own (`timings.LOW_ENDS`,
`timings.HIGH_ENDS`), every other schedule a seeded draw (`timings.draw`):

- **the visibility timeout**, after which a failed batch's messages are received again: 0 s to
  12 hours for a queue ("Values range: 0 to 43200. Maximum: 12 hours",
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html),
  and no shorter than the function's timeout, or Lambda refuses the event source mapping
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): from the function's
  timeout to 12 h. With `--template` and an SQS source there, the queue's own.
- **SQS's copy of a message**: a standard queue keeps copies of a message on several servers, and a
  copy not deleted where a server was unavailable "you might get ... again when you receive
  messages" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html),
  for as long as the queue keeps a message: its retention period, 60 s to 14 days, 4 days
  (345,600 s) by default, after which SQS deletes it
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html):
  from 0 s to the retention period after the message was sent (S3's own lag, "a minute or longer",
  delays the message and its copies alike). With `--template`, the source queue's own retention
  period; a named copy time past it is not a schedule (the message is gone by then).

The families (`schedules`; run by `deliver`):

- `late`: SQS delivers every message of the batch again, at each end of its range, at COPY_DRAWS
  draws, just past midnight and past 15 minutes (where the queue still keeps the message); the same order uploaded again (a new version, a
  new message) past Stripe's 24-hour key window and 3 days later.
- `retry_ends`: a fault at each boundary on two receives, the visibility timeout at its low end
  (the function's timeout) and its high end (12 h: the third receive is a day after the first).
- `again`: every receive fails at a boundary until the message is in the dead-letter queue; a day
  later it is moved back to the source queue (SQS's dead-letter queue redrive, StartMessageMoveTask:
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html),
  each as a new message (the check does not rely on a moved message keeping its id), or the same
  order is uploaded again.
- `accounts`: another account's order with the same order id and bytes: its message after the
  batch is done, in the same batch, or received by another poller while the first invocation sits
  at each place a copy can start. Each upload must be charged as the clean run charged one. For a
  function that reads the customer mapping, as on S3, one more such upload after the batch is done:
  its file names the first account's customer and its metadata the first account (`timed.NAMES_CUSTOMER`).
- `runs` (`idem.explore.families.runs`) and the SDKs' own resends (`idem.sim.sdk_retries`) are the same as on S3.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ...sim.faults import FaultPlan, How
from ...sim.ttl_sweep import sweep_expired
from . import accounts, timings
from ..run import triggers
from .timed import AGAIN_AFTER, AGAIN_HOW, DAYS_LATER, NAMES_CUSTOMER, PAST_15_MINUTES, PAST_KEY_WINDOW, \
    PAST_MIDNIGHT, Later, _every_resend, naming_first_customer, retention_words
from .timings import HIGH_ENDS, LOW_ENDS, seconds, sqs_copy_delay as copy_delay

def dead_letter_last_second(retention: float) -> Later:
    """The again family's redrive in the last second a template's dead-letter queue keeps a message:
    "For standard queues, the expiration of a message is always based on its original enqueue timestamp"
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/setting-up-dead-letter-queue-retention.html),
    so it counts from the first message's enqueue."""
    why = f"the dead-letter queue's last second of its {retention_words(retention)} retention"
    return Later("again", retention - 1.0, why, "redrive", sqs=True, from_start=True)


def schedules(make: Callable[..., Any], retries: Iterable[int], exception_at: Sequence[Any],
              copy_at: Sequence[Any], retention: float = timings.RETENTION_DEFAULT,
              dead_letter_retention: float = 0.0, names_customer: bool = False) -> list[Any]:
    """The SQS families' schedules (see the module docstring); `make` builds a schedule.Schedule;
    `retention`: the source queue's retention period (seconds); `dead_letter_retention`: a template's
    dead-letter queue's (0: none declared), whose last second is redriven too when it is past a day;
    `names_customer`: the function reads the customer mapping (Bob's file naming Alice's customer)."""
    retries = tuple(retries)
    most, least = max(retries), min(retries)
    points = [(LOW_ENDS, "low end (0 s)"), (HIGH_ENDS, f"high end (the queue's retention period, {seconds(retention)})")]
    points += [(timings.draw(f"sqs-late/{n}"), f"seeded draw {n}") for n in range(1, timings.COPY_DRAWS + 1)]
    found = [make(None, "duplicate", None, least, timing=t, later=Later("late", why=why, sqs=True)) for t, why in points]
    found += [make(None, "duplicate", None, least, later=Later("late", at, why, sqs=True))
              for at, why in (PAST_MIDNIGHT, PAST_15_MINUTES) if at <= retention]  # a copy of a message still kept
    found += [make(None, "duplicate", None, least, later=Later("late", at, why, "upload", sqs=True))
              for at, why in (PAST_KEY_WINDOW, DAYS_LATER)]
    if most >= 2:
        found += [make(FaultPlan(b, "1,2", How.EXCEPTION), "single", None, most, timing=ends,
                       later=Later("retry_ends", sqs=True)) for b in exception_at for ends in (LOW_ENDS, HIGH_ENDS)]
    every = ",".join(str(n) for n in range(1, most + 2))  # every receive the redrive policy allows
    found += [make(FaultPlan(b, every, How.EXCEPTION, run=_every_resend(b)), "single", None, most,
                   later=Later("again", at, why, how, sqs=True))
              for b in exception_at for at, why in AGAIN_AFTER for how in AGAIN_HOW]
    if dead_letter_retention - 1.0 > PAST_KEY_WINDOW[0]:
        found += [make(FaultPlan(b, every, How.EXCEPTION, run=_every_resend(b)), "single", None, most,
                       later=dead_letter_last_second(dead_letter_retention)) for b in exception_at]
    found += [make(None, delivery, None, least, later=Later("accounts", how=how, sqs=True))
              for delivery, how in (("duplicate", "after"), ("same_batch", "same_batch"))]
    if names_customer:
        found += [make(None, "duplicate", None, least, later=Later("accounts", how=NAMES_CUSTOMER, sqs=True))]
    found += [make(None, "concurrent", b, least, later=Later("accounts", how="concurrent", sqs=True)) for b in copy_at]
    return found


def deliver_batch(runtime: Any, world: Any, batch: list[Any], schedule: Any, again: Callable[[], Any] | None,
                  number: int, body: Callable[[int, int], bytes], link: Callable[[str], None]) -> list[Any]:
    """Run one schedule under --trigger sqs: one of these families (`deliver`), or any other
    (`triggers.deliver_sqs`); returns the uploads to judge."""
    if schedule.later is None:
        return triggers.deliver_sqs(runtime, world, batch, schedule, again)
    return deliver(runtime, world, batch, schedule, number, body, link,
                   lambda obj: triggers.sqs_body(runtime, world, obj))


def deliver(runtime: Any, world: Any, batch: list[Any], schedule: Any, number: int,
            body: Callable[[int, int], bytes], link: Callable[[str], None],
            message: Callable[[Any], str]) -> list[Any]:
    """Run one SQS schedule of these families: `batch` (its uploads, one message each) is sent, and
    what the family adds; returns the uploads to judge (another account's order is one more).
    `message(obj)` is the S3 event's message body for an upload."""
    later = schedule.later
    uploads = list(batch)

    def other() -> str:
        key = accounts.other_account_key(batch[0].key, number)
        link(key)
        data, claimed = body(number, 1), {}  # the same order id, the same bytes
        if later.how == NAMES_CUSTOMER:  # or the first account's customer named, as on S3
            data, claimed = naming_first_customer(data, batch[0].key)
        uploads.append(world.upload(key, data, **claimed))
        return message(uploads[-1])

    for obj in batch:
        runtime.send_message(message(obj))
    if later.kind == "accounts" and later.how == "same_batch":
        runtime.send_message(other())
    if later.kind == "late" and later.how != "upload":
        runtime.copy_messages(at=later.seconds or copy_delay(schedule.timing, runtime.mapping.retention))
    if later.kind == "accounts" and later.how == "concurrent":
        runtime.during(schedule.copy_at, lambda: runtime.receive_now(other()))
    if later.kind == "retry_ends":  # a receive 12 h later meets DynamoDB's TTL deletion (ttl_sweep)
        poll = runtime._poll
        runtime._poll = lambda only=None: (sweep_expired(world.clock.now()), poll(only))[1]
    runtime.run()
    if later.kind == "late" and later.how == "upload":  # the same order again, its messages long gone
        world.clock.advance_to(world.clock.start + later.seconds)
        sweep_expired(world.clock.now())  # DynamoDB's TTL has deleted what expired meanwhile
        runtime.send_message(message(world.upload(batch[0].key, body(number, 1))))
    elif later.kind == "again":
        if later.from_start:
            world.clock.advance_to(max(world.clock.now(), world.clock.start + later.seconds))
        else:
            world.clock.advance(later.seconds)
        sweep_expired(world.clock.now())
        runtime.watch.plan = runtime.watch.plan.over()  # the outage is over; a second fault is not
        if later.how == "redrive":  # the dead-letter queue's messages moved back to the source queue
            for moved in world.take_messages(world.queue_url):
                runtime.send_message(moved["Body"])
        else:
            runtime.send_message(message(world.upload(batch[0].key, body(number, 1))))
    elif later.kind == "accounts" and later.how in ("after", NAMES_CUSTOMER):
        world.clock.advance(5.0)
        runtime.send_message(other())
    else:
        return uploads
    runtime.run()
    return uploads

