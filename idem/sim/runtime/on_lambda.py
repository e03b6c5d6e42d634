"""What a function sees on Lambda, for a handler the runtime does not wire itself: its settings,
boto3's session, and one clock (time, datetime, monotonic, uuid1) that reads the virtual one."""
from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import itertools
import os
import threading
import time
import uuid
from typing import Any, Callable, Iterator

import boto3
import time_machine

from ..boundary import current
from ..sessions import THREAD_STARTS, every_session_watched, inherit_invocations
from .thread_waits import event_and_queue_waits, note_move, own_time, set_own_time


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
def waits_on_clock(clock: Any) -> Iterator[None]:
    """While it lasts, a handler's `Future.result(timeout=...)` and `Future.exception(timeout=...)` time
    out on the virtual clock. A slow call moves that clock at once, so the future is done in real time at
    once too, and its waiter would never see the deadline a slow answer makes it miss on Lambda. So each
    future carries the virtual time it was made and done at, and an answer that came after the wait's
    deadline raises TimeoutError, as the wait would have at its deadline ("If the call hasn't completed in
    timeout seconds, then a TimeoutError will be raised":
    https://docs.python.org/3/library/concurrent.futures.html#concurrent.futures.Future.result); the call
    itself goes on, as there. The wait starts where its own thread's time is: the virtual time the future
    was made at, moved on by what that thread itself moved the clock since (its slow calls, its sleeps),
    not by another thread's slow call. `concurrent.futures.wait` and `as_completed` with a timeout judge
    their futures alike (`_wait_on_clock`, `_as_completed_on_clock`). Waits outside an invocation, or with
    no timeout, are left alone. So does `Thread.join` with a timeout, read with `is_alive()` afterwards
    (`_join_on_clock`), and so do `Event.wait` and `Queue.get` (`thread_waits`)."""
    future = concurrent.futures.Future
    own = (future.__init__, future.set_result, future.set_exception, future.result, future.exception)
    if getattr(own[3], "_idem_on_clock", False):  # already inside (a concurrent copy)
        yield
        return
    moved: dict[int, float] = {}  # the seconds each thread has moved the clock by
    own_advance_to = clock.advance_to

    def advance_to(when: float) -> float:
        before = clock.now()
        now = own_advance_to(when)
        moved[threading.get_ident()] = moved.get(threading.get_ident(), 0.0) + (now - before)
        note_move(now - before)
        return now

    def made(self: Any) -> None:
        own[0](self)
        self._idem_made = _stamp(clock, moved)

    def done(setter: Callable[..., Any]) -> Callable[..., Any]:
        def set_it(self: Any, value: Any) -> None:
            self._idem_done_at, self._idem_done_seq = clock.now(), next(_DONE)
            setter(self, value)
        return set_it

    def on_clock(wait_for: Callable[..., Any]) -> Callable[..., Any]:
        def wait(self: Any, timeout: float | None = None) -> Any:
            if timeout is None or current() is None:
                return wait_for(self, timeout)
            began = _began(clock, moved, [self])
            late = lambda: _done_at(self, began) > began + timeout  # noqa: E731
            try:
                answer = wait_for(self, timeout)
            except concurrent.futures.TimeoutError:
                raise
            except BaseException:
                if late():
                    raise concurrent.futures.TimeoutError() from None
                raise
            if late():
                raise concurrent.futures.TimeoutError()
            return answer
        wait._idem_on_clock = True  # type: ignore[attr-defined]
        return wait

    clock.advance_to = advance_to
    future.__init__ = made  # type: ignore[method-assign]
    future.set_result, future.set_exception = done(own[1]), done(own[2])  # type: ignore[method-assign]
    future.result, future.exception = on_clock(own[3]), on_clock(own[4])  # type: ignore[method-assign]
    modules = (concurrent.futures, concurrent.futures._base)
    _WAITING.append((clock, moved))
    for module in modules:  # a handler's `from concurrent.futures import wait` reads these at its import
        module.wait, module.as_completed = _wait_on_clock, _as_completed_on_clock  # type: ignore[assignment]
    thread = threading.Thread
    thread.join, thread.is_alive = _join_on_clock, _alive_on_clock  # type: ignore[method-assign]
    try:
        with event_and_queue_waits(clock):
            yield
    finally:
        thread.join, thread.is_alive = _OWN_THREADS  # type: ignore[method-assign]
        for module in modules:
            module.wait, module.as_completed = _OWN_WAITS  # type: ignore[assignment]
        _WAITING.remove((clock, moved))
        (future.__init__, future.set_result, future.set_exception, future.result,  # type: ignore[method-assign]
         future.exception) = own
        if clock.__dict__.get("advance_to") is advance_to:
            del clock.advance_to


#: (the virtual clock, the seconds each thread has moved it by) of each waits_on_clock in force
_WAITING: list[tuple[Any, dict[int, float]]] = []
_OWN_WAITS = (concurrent.futures.wait, concurrent.futures.as_completed)
_OWN_THREADS = (threading.Thread.join, threading.Thread.is_alive)


def _note_start(self: threading.Thread) -> None:
    """As an invocation starts a thread (`inherit_invocations`): the virtual time it started at and what its
    starter had moved the clock by; the thread notes, as it ends, the virtual time it ended at on its own
    time (its start, moved on by its own slow calls and sleeps)."""
    if not _WAITING:
        return
    clock, moved = _WAITING[-1]
    self._idem_started = _stamp(clock, moved)  # type: ignore[attr-defined]
    started_at, own_run, starter_time = self._idem_started[0], self.run, own_time(clock)  # type: ignore[attr-defined]
    running = current()
    if running is not None and isinstance(getattr(running[1], "threads", None), list):
        running[1].threads.append(self)

    def run() -> None:
        mine = threading.get_ident()
        moved_then = moved.get(mine, 0.0)
        if running is not None:  # its own clock starts where its starter's was (thread_waits.own_time)
            set_own_time(starter_time, running[1])
        try:
            own_run()
        finally:
            self._idem_ended_at = started_at + moved.get(mine, 0.0) - moved_then  # type: ignore[attr-defined]
    self.run = run  # type: ignore[method-assign]


THREAD_STARTS.append(_note_start)


def _stamp(clock: Any, moved: dict[int, float]) -> tuple[float, int, float]:
    """What a future or a thread is made with: the virtual time, its maker, and what the maker had moved the clock by."""
    me = threading.get_ident()
    return clock.now(), me, moved.get(me, 0.0)


def _mine_since(stamp: tuple[float, int | None, float] | None, clock: Any, moved: dict[int, float]) -> float | None:
    """The calling thread's own time, if it made what `stamp` (made at, maker, what the maker had moved the clock
    by) was taken of: that virtual time, moved on by what the caller itself moved the clock by since (not by
    another thread's slow call); None for what another thread made."""
    if stamp is None or stamp[1] != threading.get_ident():
        return None
    made_at, maker, moved_then = stamp
    return min(clock.now(), made_at + moved.get(maker, 0.0) - moved_then)


def _own_time(thread: threading.Thread) -> float | None:
    """The calling thread's own time, if it started `thread` (`_mine_since`)."""
    return _mine_since(getattr(thread, "_idem_started", None), *_WAITING[-1]) if _WAITING else None


def _join_on_clock(self: threading.Thread, timeout: float | None = None) -> None:
    """Thread.join on the virtual clock: a thread whose own slow calls ran past the deadline is still
    alive when the join returns ("As join() always returns None, you must call is_alive() after join() to
    decide whether a timeout happened": https://docs.python.org/3/library/threading.html#threading.Thread.join),
    until its starter's own time reaches the virtual time it ended at. A join that waits to its end (no
    timeout, or one that reaches it) leaves it ended."""
    began = _own_time(self) if current() is not None else None
    _OWN_THREADS[0](self, timeout)
    ended_at = getattr(self, "_idem_ended_at", None)
    if began is None or ended_at is None or _OWN_THREADS[1](self):
        return
    if timeout is not None and ended_at > began + timeout:
        self._idem_alive_until = ended_at  # type: ignore[attr-defined]
    else:
        self.__dict__.pop("_idem_alive_until", None)


def _alive_on_clock(self: threading.Thread) -> bool:
    """Thread.is_alive; inside an invocation, a thread a timed join gave up on is alive until its
    starter's own time reaches the virtual time it ended at (`_join_on_clock`)."""
    if _OWN_THREADS[1](self):
        return True
    until = getattr(self, "_idem_alive_until", None)
    now = _own_time(self) if until is not None and current() is not None else None
    return now is not None and now < until


def _began(clock: Any, moved: dict[int, float], futures: Any) -> float:
    """When a wait on `futures` begins on the waiting thread's own time: the clock, less what other
    threads moved it by since this thread made one of them (waits_on_clock)."""
    mine = [t for t in (_mine_since(getattr(f, "_idem_made", None), clock, moved) for f in futures) if t is not None]
    return min([clock.now(), *mine])


def _done_at(future: Any, began: float) -> float:
    """The virtual time `future` was done at (one done outside any invocation: when the wait began)."""
    return float(getattr(future, "_idem_done_at", began))


#: the order futures were done in, for those done at one virtual time
_DONE = itertools.count(1)


def _arrived(fs: set[Any], began: float) -> list[tuple[float, Any]]:
    """The futures of `fs` done (in real time, at once: a slow call moved the clock instead), each with
    the virtual time it was done at, in the order they came."""
    came = sorted((f for f in fs if f.done()), key=lambda f: (_done_at(f, began), getattr(f, "_idem_done_seq", 0)))
    return [(_done_at(f, began), f) for f in came]


def _wait_on_clock(fs: Any, timeout: float | None = None, return_when: str = concurrent.futures.ALL_COMPLETED) -> Any:
    """`concurrent.futures.wait` on the virtual clock: a future done after the deadline is not done
    ("Returns a named 2-tuple of sets ... done ... not_done":
    https://docs.python.org/3/library/concurrent.futures.html#concurrent.futures.wait), and with
    FIRST_COMPLETED or FIRST_EXCEPTION the wait ends at the virtual time the first one came."""
    if timeout is None or current() is None or not _WAITING:
        return _OWN_WAITS[0](fs, timeout, return_when)
    clock, moved = _WAITING[-1]
    fs = set(fs)
    began = _began(clock, moved, fs)
    _OWN_WAITS[0](fs, timeout)  # the calls themselves, done at once in real time (a slow one moved the clock)
    came = _arrived(fs, began)
    ends = began + timeout
    if return_when == concurrent.futures.FIRST_COMPLETED and came:
        ends = min(ends, came[0][0])
    elif return_when == concurrent.futures.FIRST_EXCEPTION:
        failed = [when for when, f in came if not f.cancelled() and f.exception() is not None]
        ends = min([ends] + failed[:1])
    done = {f for when, f in came if when <= ends}
    return concurrent.futures._base.DoneAndNotDoneFutures(done, fs - done)


def _as_completed_on_clock(fs: Any, timeout: float | None = None) -> Iterator[Any]:
    """`concurrent.futures.as_completed` on the virtual clock: the futures done by the deadline, in the
    virtual order they came, then TimeoutError for the rest ("raises TimeoutError if __next__() is
    called and the result isn't available after timeout seconds from the original call":
    https://docs.python.org/3/library/concurrent.futures.html#concurrent.futures.as_completed)."""
    if timeout is None or current() is None or not _WAITING:
        return _OWN_WAITS[1](fs, timeout)
    clock, moved = _WAITING[-1]
    fs = set(fs)
    began = _began(clock, moved, fs)  # from the call, not from the first __next__

    def arriving() -> Iterator[Any]:
        _OWN_WAITS[0](fs, timeout)
        on_time = [f for when, f in _arrived(fs, began) if when <= began + timeout]
        yield from on_time
        if len(on_time) < len(fs):
            raise concurrent.futures.TimeoutError(f"{len(fs) - len(on_time)} (of {len(fs)}) futures unfinished")
    return arriving()


#: the clock ids whose time has a reference point of the machine's own (its boot): one execution
#: environment's, on Lambda (https://man7.org/linux/man-pages/man2/clock_gettime.2.html)
_MONOTONIC_IDS = frozenset(getattr(time, name) for name in ("CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW", "CLOCK_BOOTTIME",
                                                            "CLOCK_UPTIME_RAW") if hasattr(time, name))


@contextlib.contextmanager
def as_lambda(env: dict[str, str], clock: Any, session: Any,
              sleep: Callable[[float], None] | None = None, monotonic_offset: float | None = None) -> Iterator[None]:
    """What a function sees on Lambda, for a handler the runtime cannot wire itself: its
    settings in os.environ, boto3's default session (the watched one, on moto), every other
    boto3 session watched too (`every_session_watched`), and one clock: `time.time`,
    `datetime.now/utcnow/today` and the rest through time-machine
    (https://time-machine.readthedocs.io), and the monotonic clocks, which time-machine leaves
    alone, by hand (`time.monotonic`, `time.perf_counter`, which since Python 3.13 is the same clock
    (https://docs.python.org/3/library/time.html#time.perf_counter), and `time.clock_gettime` of a
    monotonic clock id), all reading the virtual clock (`monotonic_offset`: what they add to it,
    the execution environment's own; without one they read 1,000 s at entry). Everything is put back afterwards."""
    saved_env = {name: os.environ.get(name) for name in env}
    saved = (boto3.DEFAULT_SESSION, time.monotonic, time.monotonic_ns, time.perf_counter, time.perf_counter_ns,
             time.clock_gettime, time.clock_gettime_ns)
    saved_register, saved_sleep, saved_uuid1 = atexit.register, time.sleep, uuid.uuid1
    # time.sleep in an invocation moves the virtual clock (LocalLambda.sleep); elsewhere it sleeps
    time.sleep = lambda seconds: (sleep or (lambda _s: None))(seconds) if current() else saved_sleep(seconds)  # type: ignore[assignment]
    uuid.uuid1 = _uuid1  # type: ignore[assignment]
    # Lambda never runs a function's atexit handlers (its process is frozen, then killed): what
    # the handler registers is dropped, so the check's own exit runs none of it either.
    atexit.register = _dropped  # type: ignore[assignment]
    os.environ.update(env)
    time.tzset()  # the function's TZ (Lambda's :UTC unless it sets its own): its local time follows it
    boto3.DEFAULT_SESSION = session
    # The runtime moves the clock between invocations, and inside one only during a slow call
    # (`LocalLambda.in_flight`); otherwise it stands still (tick=False).
    travelling = _travelling(clock)
    travelling.__enter__()
    offset = 1_000.0 - clock.now() if monotonic_offset is None else monotonic_offset
    def monotonic() -> float:  # the environment's monotonic clock, however it is read
        return offset + clock.now()

    def monotonic_ns() -> int:
        return int(monotonic() * 1e9)

    own_gettime, own_gettime_ns = saved[5], saved[6]
    time.monotonic = time.perf_counter = monotonic  # type: ignore[assignment]
    time.monotonic_ns = time.perf_counter_ns = monotonic_ns  # type: ignore[assignment]
    time.clock_gettime = lambda clock_id: (  # type: ignore[assignment]
        monotonic() if clock_id in _MONOTONIC_IDS else own_gettime(clock_id))
    time.clock_gettime_ns = lambda clock_id: (  # type: ignore[assignment]
        monotonic_ns() if clock_id in _MONOTONIC_IDS else own_gettime_ns(clock_id))
    try:
        with every_session_watched(), inherit_invocations(), waits_on_clock(clock):
            yield
    finally:
        travelling.__exit__(None, None, None)
        atexit.register, time.sleep, uuid.uuid1 = saved_register, saved_sleep, saved_uuid1  # type: ignore[assignment]
        (boto3.DEFAULT_SESSION, time.monotonic, time.monotonic_ns, time.perf_counter, time.perf_counter_ns,  # type: ignore[assignment]
         time.clock_gettime, time.clock_gettime_ns) = saved
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        time.tzset()
