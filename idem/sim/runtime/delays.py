"""When Lambda retries an asynchronous invocation that failed: the local runtime's one rule for it.

Lambda documents a one-minute wait before the second attempt and two minutes before the third
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). The same page
says a throttled or system-failed invocation goes back to the queue and is tried again for up to the
event's maximum age (6 hours by default), so a retry can come later than that. `documented_retry_delay`
is the runtime's default (the documented waits); `idem.explore.timings` gives a runtime any delay in
the documented range instead, through `LocalLambda.retry_delay`.
"""
from __future__ import annotations

from typing import Callable

#: the documented waits: after the first failure, then after the second
RETRY_DELAYS = (60.0, 120.0)
#: (attempt that failed, the event's age in seconds) -> seconds until the next attempt
RetryDelay = Callable[[int, float], float]


def documented_retry_delay(attempt: int, age: float) -> float:
    """The documented wait after attempt `attempt` failed, whatever the event's age."""
    return RETRY_DELAYS[attempt - 1]
