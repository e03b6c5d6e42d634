"""The delays `idem check` schedules, as the documents give them: ranges with their ends, not points.

Each delay is drawn from its documented range by a seeded generator (the same draw every run), and
each range's two ends are schedules of their own (`idem.explore.families.timed`):

- a copy of S3's event: S3 notifications are "designed to be delivered at least once. Typically
  ... in seconds but can sometimes take a minute or longer"
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html), and a copy that
  reached Lambda's queue may wait there, or come again, up to the event's maximum age ("Even if your
  function doesn't return an error, it's possible for it to receive the same event from Lambda
  multiple times because the queue itself is eventually consistent",
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): from 0 s to a
  minute plus the maximum event age (6 h by default, at most 6 h:
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html);
- through EventBridge, whose retry policy keeps trying a target for up to 24 h and 185 times by
  default (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html;
  MaximumEventAgeInSeconds 60-86400, MaximumRetryAttempts 0-185:
  https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html): from 0 s to
  the policy's maximum age (24 h; with --template the rule target's own, 0 when it makes no retry
  attempt) plus the maximum event age. The attempts are not counted down: their back-off is not
  published, so any of them may come as late as the policy's age allows;
- Lambda's retry after a function error: one minute before the second attempt, two before the third
  (the same page), but a retry that is throttled or meets a system error goes back to the queue and
  is tried "for up to 6 hours": from the documented wait to what is left of the event's maximum age.

- under --trigger sqs, the queue's visibility timeout (from the function's timeout to 12 h) and SQS's
  copy of a message (until the queue's retention period ends): `idem.explore.families.sqs_timed`.

The check's clock starts at CHECK_START, Sunday 2023-12-31 23:58:00 UTC: a retry or a copy two minutes
later is on another day, ISO week (Monday 2024-01-01 starts week 1), month and year in UTC, so a key
with the UTC date, week or month in it meets the next one (and in a zone west of UTC, where that
midnight comes within the retries' six hours, its own). East of UTC it is already Monday 1 January,
so the family zones (`timed`) starts the clock 6, 12 and 18 hours earlier, and a retry at the high end
of its range meets local midnight in every zone from UTC to UTC+14. Delays are drawn on a
log scale (seconds and hours are both reached). A draw is a fraction of its range (0 its low end, 1
its high end), so the same draw fits a function whose maximum event age the template sets.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timezone

from ...sim.runtime.delays import RETRY_DELAYS, RetryDelay

#: Sunday 2023-12-31T23:58:00Z: the day, the ISO week, the month and the year end 120 s into every
#: schedule (a Sunday that is a 31 December: the day's, the week's and the year's keys all change at once)
CHECK_START = datetime(2023, 12, 31, 23, 58, tzinfo=timezone.utc).timestamp()
#: seconds from CHECK_START to the next midnight
TO_MIDNIGHT = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp() - CHECK_START
#: "can sometimes take a minute or longer" (S3's EventNotifications page, above): the lag counted
S3_LAG = 60.0
#: EventBridge retries delivery to a target for up to 24 h (API_RetryPolicy, above)
EVENTBRIDGE_RETRY_AGE = 86_400.0
#: Stripe may prune a key once it is 24 h old, and a reused pruned key is a new request
#: (https://docs.stripe.com/idempotency)
STRIPE_KEY_WINDOW = 86_400.0
#: how many seeded draws the `late` family adds between a copy's two ends
COPY_DRAWS = 3
SEED = "idem-check-timings"


@dataclass(frozen=True)
class Timing:
    """Where in its range each delay of one schedule falls: 0 the low end, 1 the high end. `copy`:
    S3's copy of the event (delivery `duplicate`); `retries`: Lambda's first and second retry."""

    copy: float = 0.0
    retries: tuple[float, float] = (0.0, 0.0)
    name: str = "drawn"  # "drawn", or which ends it is: "low ends", "high ends"

    def __post_init__(self) -> None:
        if not all(0.0 <= u <= 1.0 for u in (self.copy, *self.retries)):
            raise ValueError(f"a timing is a fraction of each range, 0 to 1: {self}")


LOW_ENDS = Timing(0.0, (0.0, 0.0), "low ends")
HIGH_ENDS = Timing(1.0, (1.0, 1.0), "high ends")


def draw(key: str) -> Timing:
    """The seeded draw for the schedules of one shape (`key`): the same every run and process."""
    rng = random.Random(f"{SEED}/{key}")
    return Timing(rng.random(), (rng.random(), rng.random()))


def between(low: float, high: float, u: float) -> float:
    """The point `u` of the way from `low` to `high`, on a log scale (linear from 0)."""
    if high <= low:
        return low
    if low <= 0:
        return high * u if u < 1 else high
    return float(low * (high / low) ** u)


def copy_range(trigger: str, max_event_age: float,
               eventbridge_window: float = EVENTBRIDGE_RETRY_AGE) -> tuple[float, float]:
    """When a copy of the event can come, in seconds after the first: see the module docstring.
    `eventbridge_window`: how long EventBridge retries the target (`Deployed.eventbridge_window`)."""
    lag = eventbridge_window if trigger == "eventbridge" else S3_LAG
    return 0.0, lag + max_event_age


def copy_delay(timing: Timing | None, trigger: str, max_event_age: float,
               eventbridge_window: float = EVENTBRIDGE_RETRY_AGE) -> float:
    """Seconds after the first delivery that the copy comes (a schedule with no timing: the low end)."""
    return between(*copy_range(trigger, max_event_age, eventbridge_window), (timing or LOW_ENDS).copy)


def retry_range(attempt: int, age: float, max_event_age: float) -> tuple[float, float]:
    """When Lambda's retry after attempt `attempt` can come, for an event `age` seconds old: from
    the documented wait to the end of the event's maximum age (later than that, it is dropped)."""
    low = RETRY_DELAYS[attempt - 1]
    return low, max(low, max_event_age - age)


def retry_delay(timing: Timing | None, max_event_age: float) -> RetryDelay:
    """The runtime's rule for its retries (`LocalLambda.retry_delay`) under `timing`."""
    u = (timing or LOW_ENDS).retries

    def delay(attempt: int, age: float) -> float:
        return between(*retry_range(attempt, age, max_event_age), u[attempt - 1])
    return delay


# -- under --trigger sqs (idem.explore.families.sqs_timed: the pages behind these numbers) ---------------
#: SQS's longest visibility timeout, 12 h
#: (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html)
VISIBILITY_MAX = 43_200.0
#: SQS's default message retention period, 4 days (60 s to 14 days:
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html)
RETENTION_DEFAULT = 345_600.0
#: the function's timeout the check's runtime uses when no template gives one (LocalLambda's); Lambda
#: refuses a queue whose visibility timeout is shorter (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html)
FUNCTION_TIMEOUT = 30.0


def visibility_range(timeout: float = FUNCTION_TIMEOUT) -> tuple[float, float]:
    """The visibility timeouts a queue feeding a function of `timeout` seconds can have."""
    return timeout, max(timeout, VISIBILITY_MAX)


def visibility_timeout(timing: Timing | None, timeout: float = FUNCTION_TIMEOUT) -> float:
    """The visibility timeout of a schedule whose timing is `timing` (None: the low end)."""
    return between(*visibility_range(timeout), (timing or LOW_ENDS).retries[0])


def sqs_copy_range(retention: float = RETENTION_DEFAULT) -> tuple[float, float]:
    """When SQS's copy of a message can be received, in seconds after the message was sent: until
    the queue deletes it, at the end of its retention period (S3's lag delays the message and its
    copies alike)."""
    return 0.0, retention


def sqs_copy_delay(timing: Timing | None, retention: float = RETENTION_DEFAULT) -> float:
    return between(*sqs_copy_range(retention), (timing or LOW_ENDS).copy)


def seconds(value: float) -> str:
    """A delay as a person reads it: 0 s, 45 s, 16 min 1 s, 6 h 1 min, 1 d 0 h 0 min 1 s."""
    whole = int(round(value))
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n]
    return " ".join(shown) or "0 s"


def describe(timing: Timing | None, trigger: str, max_event_age: float) -> str:
    """A timing in words, for a schedule's label: the copy's delay and the retries' first waits."""
    timing = timing or LOW_ENDS
    retry = retry_delay(timing, max_event_age)
    return (f"{timing.name}: a copy {seconds(copy_delay(timing, trigger, max_event_age))} later; "
            f"retries {seconds(retry(1, 0.0))} then {seconds(retry(2, retry(1, 0.0)))} after a failure")
