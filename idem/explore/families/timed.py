"""The schedules where time and accounts matter: four named families of `idem check`.

- `late`: no fault; a copy of the event at each end of its documented range, at COPY_DRAWS seeded
  draws inside it (`idem.explore.families.timings`), just past midnight (the clock starts at 23:58 UTC) and
  past a 15-minute window; then, later than any copy can come, the same order uploaded again (the
  same bytes, a new version: the same order, docs/one_charge_per_order.md) past Stripe's 24-hour key window and three
  days later. One succeeded charge per account and order over the order's whole life.
- `retry_ends`: a fault at each boundary on the first two arrivals, so Lambda retries twice, with
  both retries at the low ends of their ranges (the documented one and two minutes) and at the high
  ends (the end of the event's maximum age).
- `again`: the same order after the first went to the failure queue: every attempt fails at a
  boundary (an exception), then, the outage over, the event is redriven from the failure queue, or
  the uploader uploads the same order again (same bytes, a new version), a day and 1 s later (past
  Stripe's key window), and in the last second the failure queue keeps the event (4 days).
- `accounts`: another account's order with the same order id and the same bytes (`alice/...` and
  `bob/...`, see `idem.explore.families.accounts`), after the first is done or while the first invocation sits
  at each place a copy can start. Two orders: each must be charged as the clean run was.
- `zones`: `retry_ends`' schedules with both retries at the high ends, the clock started 6, 12 and 18
  hours before the check's usual start (17:58, 11:58 and 05:58 UTC on Sunday 31 December). A key with a
  local date, week, month or year in it meets the next one when a retry crosses local midnight; from
  23:58 UTC no retry does east of UTC (it is already Monday 1 January there). From these starts the
  last retry, up to the event's maximum age later (six hours by default), crosses it in every zone from
  UTC to UTC+14 (local midnight falls between the start and six hours later for offsets of 0-6, 6-12
  and 12-18 hours). Zones west of UTC meet their midnight from the usual start, within six hours
  (UTC-6 and further west meet it only by the families that come a day later).

Every other schedule's delays are drawn too: a copy's and Lambda's retries' (`timings.draw`, keyed by
the schedule's shape, so schedules that share a run still do: `idem.explore.run.reuse`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from ...sim.faults import END_CALL, FaultPlan, How, Side
from ...sim.sdk_retries import EVERY
from ...sim.triggers import RETENTION
from ...sim.ttl_sweep import sweep_expired
from . import accounts, timings
from ..run import triggers
from ..run.reuse import family
from .timings import HIGH_ENDS, LOW_ENDS, Timing, seconds

#: the families, as the report names and counts them (build.DIMENSIONS)
DIMENSIONS = {
    "late": "a copy of the event at each end of its documented range, at seeded draws in it, just past midnight "
            "and 15 minutes later; the same order uploaded again 24 hours (Stripe's key window) and 3 days later",
    "retry_ends": "a fault at each boundary on two arrivals, Lambda's two retries both at the low ends of their "
                  "ranges (1 and 2 minutes) and both at the high ends (the event's maximum age)",
    "again": "every attempt fails at a boundary, then the event is redriven from the failure queue or the same "
             "order uploaded again, 24 hours later (past Stripe's key window) and, on S3, 4 days later (the failure "
             "queue's retention)",
    "accounts": "another account's order with the same order id (the same bytes under another folder), after "
                "the first or while it sits at each boundary",
}
#: the family zones (S3 and EventBridge: not under --trigger sqs), counted in the report after these
ZONES = {"zones": "retry_ends at the high ends with the clock started 6, 12 and 18 hours earlier, so a retry meets "
                  "local midnight (and the next day, week, month and year) in every zone from UTC to UTC+14 "
                  "(not under --trigger sqs)"}
#: the zones family's starts: how many hours before the check's usual start (timings.CHECK_START)
ZONE_STARTS = (6, 12, 18)
#: named times for the `late` and `again` families: (seconds after the first delivery, why)
PAST_MIDNIGHT = (timings.TO_MIDNIGHT + 1.0, "just past midnight")
PAST_15_MINUTES = (15 * 60 + 1.0, "past a 15-minute window")
PAST_KEY_WINDOW = (timings.STRIPE_KEY_WINDOW + 1.0, "past Stripe's 24-hour key window")
DAYS_LATER = (3 * 86_400.0, "3 days later")


def retention_words(retention: float) -> str:
    """A queue's retention period in words: "4-day", or its seconds as `seconds` writes them."""
    return f"{retention / 86_400:g}-day" if retention % 86_400 == 0 else seconds(retention)


def before_retention_ends(retention: float = RETENTION) -> tuple[float, str]:
    """SQS keeps a message 4 days unless its queue says otherwise (MessageRetentionPeriod, 60 s to 14 days:
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html): the
    event Lambda sent to the failure queue can be redriven, and the order sent again, until its last second."""
    days = retention_words(retention)
    past = ", past Stripe's 24-hour key window" if retention - 1.0 > timings.STRIPE_KEY_WINDOW else ""
    return retention - 1.0, f"the failure queue's last second of its {days} retention{past}"


BEFORE_RETENTION_ENDS = before_retention_ends()
#: a record that is kept 15 minutes is met by the late family; the again family looks past Stripe's window
#: (under SQS: a day after the message reached the dead-letter queue, whose retention counts from the
#: message's first enqueue, so later is not always possible: idem.explore.families.sqs_timed)
AGAIN_AFTER = (PAST_KEY_WINDOW,)
#: on S3 (asynchronous invocation) the failure queue's message is new when Lambda sends it: any time in
#: its retention period is a redrive AWS allows, from a day (past Stripe's window) to the last second
AGAIN_AFTER_ASYNC = (PAST_KEY_WINDOW, BEFORE_RETENTION_ENDS)  # SQS's default retention; a template's own: `schedules`
AGAIN_HOW = ("redrive", "upload")
#: the accounts family's upload by another account whose file names the first account's linked customer, and
#: whose object's metadata names the first account: "The file never chooses who pays" (docs/money_contract.md,
#: 2), and user-defined metadata is whatever the uploader's PUT sends
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html). Run for a function that reads
#: the customer mapping (`accounts.reads_mapping`), with the check's own order file.
NAMES_CUSTOMER = "names_customer"
NAMES_CUSTOMER_WORDS = ("another account's order with the same order id, its file naming the first account's customer "
                        "and its metadata (x-amz-meta-account) the first account")


@dataclass(frozen=True)
class Later:
    """What a schedule of these families does besides its fault (Schedule.later)."""

    kind: str  # one of DIMENSIONS
    seconds: float = 0.0  # late, again: when (0 with a timing: the copy's point in its range)
    why: str = ""  # what that time is, in words
    how: str = ""  # again: redrive or upload; accounts: after, concurrent or (sqs) same_batch
    sqs: bool = False  # a schedule of --trigger sqs (idem.explore.families.sqs_timed): worded for its queue
    #: again under SQS: `seconds` counts from the first message's enqueue, not from the dead-letter queue's
    #: receipt (a dead-letter queue's message expires by its first enqueue: sqs_timed.dead_letter_last_second)
    from_start: bool = False

    def label(self, timing: Timing | None, copy_at: Any = None) -> str:
        if self.sqs:
            return self._sqs_label(timing, copy_at)
        if self.kind == "late" and self.how == "upload":
            return f"the same order uploaded again {seconds(self.seconds)} after the first ({self.why})"
        if self.kind == "late":
            when = (f"{seconds(self.seconds)} later ({self.why})" if self.seconds
                    else f"at its range's {self.why}")
            return f"a copy of the event {when}"
        if self.kind == "retry_ends":
            return f"Lambda's retries at the {(timing or LOW_ENDS).name} of their ranges"
        if self.kind == "zones":
            hours = int(self.seconds // 3600)
            return (f"the clock started {hours} h earlier ({self.why}), Lambda's retries at the "
                    f"{(timing or HIGH_ENDS).name} of their ranges")
        if self.kind == "again":
            # a fault the SDK's own resend recovers fails no attempt: the label says what is done, not
            # what it found (the queue is redriven as it is; the order is uploaded again either way)
            what = "the failure queue redriven" if self.how == "redrive" else "the same order uploaded again"
            return f"then {what} {seconds(self.seconds)} later ({self.why})"
        if self.how == NAMES_CUSTOMER:
            return f"{NAMES_CUSTOMER_WORDS}, after the first is done"
        return "another account's order with the same order id" + (
            ", after the first is done" if self.how == "after" else f", while the first is {copy_at}")


    def _sqs_label(self, timing: Timing | None, copy_at: Any) -> str:
        """The same families under --trigger sqs, in the queue's words (idem.explore.families.sqs_timed)."""
        if self.kind == "late" and self.how == "upload":
            return f"the same order uploaded again {seconds(self.seconds)} after the first ({self.why}), a new message"
        if self.kind == "late":
            when = (f"{seconds(self.seconds)} later ({self.why})" if self.seconds
                    else f"at its range's {self.why}")
            return f"SQS delivers each message of the batch again {when}"
        if self.kind == "retry_ends":
            end = "low end (the function's timeout)" if (timing or LOW_ENDS) == LOW_ENDS else "high end (12 h)"
            return f"the queue's visibility timeout at its range's {end}, unless a template sets it"
        if self.kind == "again":
            what = ("the dead-letter queue redriven to the source queue" if self.how == "redrive"
                    else "the same order uploaded again")
            after = " after the first message was sent" if self.from_start else " later"
            return f"then {what} {seconds(self.seconds)}{after} ({self.why})"
        if self.how == NAMES_CUSTOMER:
            return f"{NAMES_CUSTOMER_WORDS}, its message after the batch is done"
        where = {"after": ", its message after the batch is done",
                 "same_batch": ", its message in the same batch as the first's"}.get(
            self.how, f", received while the first is {copy_at}")
        return "another account's order with the same order id" + where


def result_label(result: Any) -> str:
    """A result's schedule in words, worded for what happened where the schedule alone cannot say
    it: an `again` schedule whose failing call was tried again inside each attempt and answered (a
    throttle the handler's own retry got past, a lost answer the SDK's resend got) failed no attempt
    before the failure queue was redriven or the order uploaded again, so the report says so rather
    than let "then the failure queue redriven" read as if something had been in it."""
    label = result.schedule.label()
    later = result.schedule.later
    if later is None or later.kind != "again" or not result.attempts:
        return label
    outage = [a for a in result.attempts if a.start < later.seconds]
    if any(a.failed for a in outage):
        return label
    clause = later.label(result.schedule.timing)
    found = ("no attempt failed (the failing call was tried again inside each attempt and answered), "
             + ("so the failure queue held nothing; " if later.how == "redrive" else "and ") + clause[len("then "):])
    return label.replace(clause, found, 1)


def _every_resend(boundary: Any) -> int:
    """The run an again-family fault has at `boundary`: every SDK attempt's answer lost after a call."""
    return EVERY if boundary.side is Side.AFTER and boundary.call != END_CALL else 1


def schedules(make: Callable[..., Any], crossed: Sequence[Any], retries: Iterable[int],
              exception_at: Sequence[Any], copy_at: Sequence[Any], trigger: str = "s3",
              failure_retention: float = RETENTION, names_customer: bool = False) -> list[Any]:
    """The four families' schedules over the boundaries a clean run crossed; `make` builds a
    schedule.Schedule; `exception_at` and `copy_at` are where a fault and a copy can come; `trigger`
    names the copy's range (`timings.copy_range`); `failure_retention`: how long the failure queue
    keeps the event (a redrive comes no later than its last second)."""
    retries = tuple(retries)
    most, least = max(retries), min(retries)
    high = ("high end (EventBridge's retry window plus the maximum event age)" if trigger == "eventbridge"
            else "high end (a minute plus the maximum event age)")
    copy_points = [(LOW_ENDS, "low end (0 s)"), (HIGH_ENDS, high)]
    copy_points += [(timings.draw(f"late/{n}"), f"seeded draw {n}") for n in range(1, timings.COPY_DRAWS + 1)]
    found = [make(None, "duplicate", None, least, timing=timing, later=Later("late", why=why))
             for timing, why in copy_points]
    found += [make(None, "duplicate", None, least, later=Later("late", at, why))
              for at, why in (PAST_MIDNIGHT, PAST_15_MINUTES)]  # copies: inside the copy range
    found += [make(None, "duplicate", None, least, later=Later("late", at, why, "upload"))
              for at, why in (PAST_KEY_WINDOW, DAYS_LATER)]  # past any copy: the order sent again
    if most >= 2:
        found += [make(FaultPlan(b, "1,2", How.EXCEPTION), "single", None, most, timing=ends,
                       later=Later("retry_ends")) for b in exception_at for ends in (LOW_ENDS, HIGH_ENDS)]
        found += [make(FaultPlan(b, "1,2", How.EXCEPTION), "single", None, most, timing=HIGH_ENDS,
                       later=Later("zones", hours * 3600.0, zone_start(hours))) for hours in ZONE_STARTS
                  for b in exception_at]
    every = ",".join(str(n) for n in range(1, most + 2))
    # every attempt fails: a lost answer after an AWS call is lost on each of the SDK's own resends
    # too (sdk_retries), else botocore's resend answers and the attempt ends ok, with nothing to redrive
    found += [make(FaultPlan(b, every, How.EXCEPTION, run=_every_resend(b)), "single", None, most,
                   later=Later("again", at, why, how))
              for b in exception_at for at, why in (PAST_KEY_WINDOW, before_retention_ends(failure_retention))
              for how in AGAIN_HOW if not (how == "redrive" and at >= failure_retention)]
    found += [make(None, "duplicate", None, least, later=Later("accounts", how="after"))]
    if names_customer:  # Bob's file naming Alice's customer
        found += [make(None, "duplicate", None, least, later=Later("accounts", how=NAMES_CUSTOMER))]
    found += [make(None, "concurrent", b, least, later=Later("accounts", how="concurrent")) for b in copy_at]
    return found


def naming_first_customer(data: bytes, first_key: str) -> tuple[bytes, dict[str, Any]]:
    """Another account's order file naming the customer linked to `first_key`'s account, and what its
    uploader writes besides (its object's metadata naming that account): NAMES_CUSTOMER's upload."""
    first_account = accounts.account_of(first_key)
    named = json.dumps({**json.loads(data), "customer": accounts.customer_for(first_account)}).encode()
    return named, {"metadata": {"account": first_account}}


def zone_start(hours: int) -> str:
    """The zones family's start `hours` before the usual one, in words: "17:58 UTC, 23:58 at UTC+6"."""
    utc = (23 * 60 + 58 - hours * 60) % (24 * 60)
    return f"{utc // 60:02d}:{utc % 60:02d} UTC, 23:58 at UTC+{hours}"


def started_earlier(schedule: Any) -> float:
    """How many seconds before timings.CHECK_START the schedule's clock starts (the zones family)."""
    later = getattr(schedule, "later", None)
    return later.seconds if later is not None and later.kind == "zones" else 0.0


def run(runtime: Any, world: Any, first: Any, schedule: Any, number: int, trigger: str,
        body: Callable[[int, int], bytes], link: Callable[[str], None]) -> list[tuple[Any, dict[str, Any], int]]:
    """Run one schedule of these families; returns each upload, its event and its order (1, or 2 for
    another account's order), as runner._overwrite does."""
    later = schedule.later
    uploads = [(first, triggers.event_for(trigger, world, first), 1)]
    event = uploads[0][1]
    runtime.send(event)
    if later.kind == "late" and later.how == "upload":  # the same order again, its copies long gone
        runtime.run()
        world.clock.advance_to(world.clock.start + later.seconds)
        sweep_expired(world.clock.now())  # DynamoDB's TTL has deleted what expired meanwhile
        obj = world.upload(first.key, body(number, 1))
        uploads.append((obj, triggers.event_for(trigger, world, obj), 1))
        runtime.send(uploads[-1][1])
        runtime.run()
    elif later.kind == "late":
        at = later.seconds or timings.copy_delay(schedule.timing, trigger, runtime.max_event_age,
                                                 getattr(runtime, "eventbridge_window", timings.EVENTBRIDGE_RETRY_AGE))
        runtime.at(at, lambda: sweep_expired(world.clock.now()))  # first: what expired by then is gone
        runtime.send(event, at=at)
        runtime.run()
    elif later.kind == "again":
        runtime.run()  # every attempt fails: the event is in the failure queue
        world.clock.advance(later.seconds)
        sweep_expired(world.clock.now())
        runtime.watch.plan = runtime.watch.plan.over()  # the outage is over; a second fault is not
        if later.how == "redrive":  # as `idem redrive` does: each message's event, sent again
            for message in world.take_messages(world.queue_url):
                runtime.send(json.loads(message["Body"]).get("requestPayload", event))
        else:
            obj = world.upload(first.key, body(number, 1))
            uploads.append((obj, triggers.event_for(trigger, world, obj), 1))
            runtime.send(uploads[-1][1])
        runtime.run()
    elif later.kind == "accounts":
        def other() -> dict[str, Any]:
            key = accounts.other_account_key(first.key, number)
            link(key)
            data, claimed = body(number, 1), {}  # the same order id, the same bytes
            if later.how == NAMES_CUSTOMER:  # or the first account's customer named
                data, claimed = naming_first_customer(data, first.key)
            obj = world.upload(key, data, **claimed)
            uploads.append((obj, triggers.event_for(trigger, world, obj), 2))
            return uploads[-1][1]
        if later.how == "concurrent":
            runtime.during(schedule.copy_at, lambda: runtime.send_now(other()))
            runtime.run()
        else:
            runtime.run()
            world.clock.advance(5.0)
            runtime.send(other())
            runtime.run()
    else:  # retry_ends, zones: the fault and the timing do it, DynamoDB's TTL deleting what expired before each retry
        swept_before_retries(runtime, world)
        runtime.run()
    return uploads


def swept_before_retries(runtime: Any, world: Any) -> None:
    """Each retry Lambda schedules is preceded, at its time, by DynamoDB's TTL deletion of what expired by
    then (`sweep_expired`): a retry at the end of the event's maximum age (six hours by default) finds an
    item whose TTL passed meanwhile gone, as it may be on AWS ("typically within two days":
    https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html)."""
    delay = runtime.retry_delay

    def delay_then_sweep(attempt: int, age: float) -> float:
        seconds = delay(attempt, age)
        runtime.at(world.clock.now() + seconds - world.clock.start, lambda: sweep_expired(world.clock.now()))
        return seconds

    runtime.retry_delay = delay_then_sweep


def drawn(found: Sequence[Any]) -> list[Any]:
    """Each schedule with its delays drawn (`timings.draw`), keyed by its shape: how the event
    arrives, what lands, what is slow (`reuse.family`), so schedules that share a run still do."""
    return [replace(s, timing=timings.draw(repr(family(s)))) if s.timing is None else s for s in found]


def renamed(schedule: Any) -> bool:
    """Are a schedule's uploads each at a name of its own (another account's order), so that each
    order's expected state is the clean run's under its own name (`idem.explore.judge.state.judge`)?"""
    return schedule.later is not None and schedule.later.kind == "accounts"
