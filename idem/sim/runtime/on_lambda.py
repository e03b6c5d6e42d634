"""What a function sees on Lambda, for a handler the runtime does not wire itself: its settings,
boto3's session, and one clock (time, datetime, monotonic, uuid1) that reads the virtual one."""
from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import time
import uuid
from typing import Any, Callable, Iterator

import boto3
import time_machine

from ..boundary import current
from ..sessions import every_session_watched, inherit_invocations


#: The time-machine travellers in force (outermost first): when the virtual clock moves inside
#: an invocation (a slow call), every one of them moves with it (`move_clocks`).
_TRAVELLERS: list[Any] = []


@contextlib.contextmanager
def _travelling(clock: Any) -> Iterator[Any]:
    traveller = time_machine.travel(clock.now(), tick=False)
    travelling = traveller.start()
    _TRAVELLERS.append(travelling)
    try:
        yield travelling
    finally:
        _TRAVELLERS.remove(travelling)
        traveller.stop()


def move_clocks(now: float) -> None:
    """Move every clock the process reads (time.time, datetime, moto's) to `now`."""
    for travelling in _TRAVELLERS:
        travelling.move_to(now)


@contextlib.contextmanager
def on_clock(clock: Any) -> Iterator[Callable[[float], Any]]:
    """Every clock in the process (time.time, datetime.now, moto's own) at `clock`'s now;
    yields the function that moves them all, for when the virtual clock moves."""
    with _travelling(clock):
        yield move_clocks


@contextlib.contextmanager
def _still() -> Iterator[Callable[[float], Any]]:
    yield lambda _when: None


def _dropped(function: Callable[..., Any], *_: Any, **__: Any) -> Callable[..., Any]:
    """atexit.register as the handler sees it: the function back, registered nowhere."""
    return function


_UUIDS = itertools.count()


def _uuid1(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
    """uuid.uuid1 on the virtual clock, unique in this process: the clock stands still inside an
    invocation, where the real uuid1 would differ only in 14 random bits (repeats within a check,
    and counts that change between two runs). The time field is the virtual time plus a count."""
    n = next(_UUIDS)
    ticks = int(time.time() * 10_000_000) + 0x01B21DD213814000 + n  # 100-ns steps since 1582-10-15
    seq = (clock_seq if clock_seq is not None else n) & 0x3FFF
    fields = (ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ((ticks >> 48) & 0x0FFF) | 0x1000,
              (seq >> 8) | 0x80, seq & 0xFF, node if node is not None else 0x0242AC110002)
    return uuid.UUID(fields=fields)


@contextlib.contextmanager
def as_lambda(env: dict[str, str], clock: Any, session: Any,
              sleep: Callable[[float], None] | None = None, monotonic_offset: float | None = None) -> Iterator[None]:
    """What a function sees on Lambda, for a handler the runtime cannot wire itself: its
    settings in os.environ, boto3's default session (the watched one, on moto), every other
    boto3 session watched too (`every_session_watched`), and one clock: `time.time`,
    `datetime.now/utcnow/today` and the rest through time-machine
    (https://time-machine.readthedocs.io), and `time.monotonic`, which time-machine leaves
    alone, by hand, all reading the virtual clock (`monotonic_offset`: what `time.monotonic` adds to it,
    the execution environment's own; without one it reads 1,000 s at entry). Everything is put back afterwards."""
    saved_env = {name: os.environ.get(name) for name in env}
    saved = (boto3.DEFAULT_SESSION, time.monotonic, time.monotonic_ns)
    saved_register, saved_sleep, saved_uuid1 = atexit.register, time.sleep, uuid.uuid1
    # time.sleep in an invocation moves the virtual clock (LocalLambda.sleep); elsewhere it sleeps
    time.sleep = lambda seconds: (sleep or (lambda _s: None))(seconds) if current() else saved_sleep(seconds)  # type: ignore[assignment]
    uuid.uuid1 = _uuid1  # type: ignore[assignment]
    # Lambda never runs a function's atexit handlers (its process is frozen, then killed): what
    # the handler registers is dropped, so the check's own exit runs none of it either.
    atexit.register = _dropped  # type: ignore[assignment]
    os.environ.update(env)
    boto3.DEFAULT_SESSION = session
    # The runtime moves the clock between invocations, and inside one only during a slow call
    # (`LocalLambda.in_flight`); otherwise it stands still (tick=False).
    travelling = _travelling(clock)
    travelling.__enter__()
    offset = 1_000.0 - clock.now() if monotonic_offset is None else monotonic_offset
    time.monotonic = lambda: offset + clock.now()  # type: ignore[assignment]
    time.monotonic_ns = lambda: int((offset + clock.now()) * 1e9)  # type: ignore[assignment]
    try:
        with every_session_watched(), inherit_invocations():
            yield
    finally:
        travelling.__exit__(None, None, None)
        atexit.register, time.sleep, uuid.uuid1 = saved_register, saved_sleep, saved_uuid1  # type: ignore[assignment]
        boto3.DEFAULT_SESSION, time.monotonic, time.monotonic_ns = saved
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
