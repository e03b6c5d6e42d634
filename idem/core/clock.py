"""Clocks: the system clock for AWS, a virtual clock for the local runtime.

Everything that reads time in `idem` (leases, expiry, retry delays) takes a clock, so
the local runtime can move time forward without anything sleeping.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Protocol

#: The virtual clock starts here: 2026-01-01T00:00:00Z. Outputs stay the same run after run.
EPOCH = 1_767_225_600.0


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""


class SystemClock:
    """Wall-clock time, as the deployed function sees it."""

    def now(self) -> float:
        return time.time()


class VirtualClock:
    """A clock that only moves when told to. `t` is seconds since the clock started."""

    def __init__(self, start: float = EPOCH) -> None:
        self.start = start
        self._now = start

    def now(self) -> float:
        return self._now

    @property
    def t(self) -> float:
        """Seconds elapsed since the clock started."""
        return self._now - self.start

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"time only moves forward (asked to advance {seconds} s)")
        self._now += seconds
        return self._now

    def advance_to(self, when: float) -> float:
        """Move to the absolute time `when`, if it is later than now."""
        self._now = max(self._now, when)
        return self._now


def iso8601(epoch_seconds: float) -> str:
    """The timestamp format AWS uses in S3 events: 2026-01-01T00:00:00.000Z."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
