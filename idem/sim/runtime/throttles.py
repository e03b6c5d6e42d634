"""A function's reserved concurrency, for its asynchronous invocations.

`ReservedConcurrentExecutions` caps how many execution environments run the function at once (0: none,
the function is throttled). Lambda: "If the function doesn't have enough concurrency available to process
all events, additional requests are throttled. For throttling errors (429) and system errors
(500-series), Lambda returns the event to the queue and attempts to run the function again for up to 6
hours by default. The retry interval increases exponentially from 1 second after the first attempt to a
maximum of 5 minutes." (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)
A throttle is no attempt: it is not one of the event's retries. An event still throttled at its maximum
age goes to the failure destination (`LocalLambda._start`: EventAgeExceeded).

Not modelled: an SQS event source mapping's pollers, which reserved concurrency also limits (the SQS
runtime invokes one batch at a time, as its schedules ask).
"""
from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Any

#: the retry interval's start and its most (the page above)
FIRST_SECONDS, MOST_SECONDS = 1.0, 300.0


def backoff(throttles: int) -> float:
    """The wait before the event is tried again after its `throttles`-th throttle: 1 s, doubling, to 5 minutes."""
    return min(MOST_SECONDS, FIRST_SECONDS * 2 ** max(0, throttles - 1))


def throttled(runtime: Any, pending: Any) -> bool:
    """Is there no concurrency left for `pending` now? Then it goes back to the queue, to be tried again
    after its backoff, and the caller does not invoke it."""
    limit = runtime.reserved_concurrency
    if limit is None or len(runtime._running) < limit:
        return False
    again = replace(pending, due=runtime.clock.now() + backoff(pending.throttles + 1), seq=next(runtime._seq),
                    throttles=pending.throttles + 1)
    heapq.heappush(runtime._queue, again)
    return True
