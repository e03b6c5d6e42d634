"""`threading.Event.wait` and `queue.Queue.get` with a timeout, judged on the virtual clock.

A slow call moves the virtual clock at once, so the thread making it sets its event, or puts its answer, at
once in real time: a handler waiting for it with a timeout would see an answer Lambda would have made it give
up on. So, inside an invocation, while `waits_on_clock` is in force, each set and each put carries the virtual
time it was made at on its maker's own clock (`own_time`), and a timed wait sees only what came by its
deadline, its own clock plus the timeout: an event set later leaves `wait` False ("the return value is False if
and only if the internal flag is still false after the timeout":
https://docs.python.org/3/library/threading.html#threading.Event.wait); an item put later leaves `get` raising
Empty ("raises the Empty exception if no item was available within that time":
https://docs.python.org/3/library/queue.html#queue.Queue.get), and stays for a later get. A wait that times
out ends at its deadline on the waiter's clock (a sleep, so one past the function's timeout ends the
invocation there). A wait ends at once in real time when nothing of its invocation can end it any more
(`nothing_can_end_it`: every thread it started ended, no pool work left); otherwise, waiting for what never
comes (a thread of its own blocked for good) lasts the timeout in real time, as Python's own.

Each thread of an invocation keeps its own clock: the invocation's start, or for a thread or pool work it
started, its starter's own time then; moved on by that thread's own slow calls and sleeps (not by another
thread's); set to a wait's deadline, or to when what it waited for came. `Condition.wait`, `Semaphore.acquire`,
`Barrier.wait`, LifoQueue, PriorityQueue and `queue.SimpleQueue` keep Python's own timing.
"""
from __future__ import annotations

import collections
import concurrent.futures.thread
import contextlib
import queue
import threading
import time
from typing import Any, Iterator

from ..boundary import current, land

_REAL_MONOTONIC = time.monotonic
#: how long each look at what is waited for lasts, in real seconds, before asking again whether anything
#: can still end the wait
_POLL = 0.002
_ALIVE = threading.Thread.is_alive
_POOL_WORKER = concurrent.futures.thread._worker
_OWN_EVENT = (threading.Event.set, threading.Event.clear, threading.Event.wait)
_OWN_QUEUE = (queue.Queue._put, queue.Queue._get, queue.Queue.get)
_OWN_WORK_ITEM = (concurrent.futures.thread._WorkItem.__init__, concurrent.futures.thread._WorkItem.run)

def own_time(clock: Any) -> float:
    """The calling thread's own virtual time (see the module's docstring); outside an invocation, or for a
    thread whose clock is not known (one a stand-in visit runs), the clock's time."""
    running = current()
    if running is None:
        return float(clock.now())
    visit, me = running[1], threading.current_thread()
    own = getattr(me, "_idem_own", None)
    if own is None or own[0] is not visit:
        if me is not getattr(visit, "thread", None) or not getattr(visit, "began", 0.0):
            return float(clock.now())
        own = me._idem_own = (visit, visit.began, 0.0)  # type: ignore[attr-defined]
    return min(float(clock.now()), own[1] + _moved(visit).get(me.ident or 0, 0.0) - own[2])


def set_own_time(when: float, visit: Any = None) -> None:
    """The calling thread's own clock, in `visit` (by default the invocation it runs in), now reads `when`
    (`own_time`)."""
    if visit is None:
        running = current()
        visit = running[1] if running is not None else None
    if visit is not None:
        me = threading.current_thread()
        me._idem_own = (visit, when, _moved(visit).get(me.ident or 0, 0.0))  # type: ignore[attr-defined]


def note_move(seconds: float) -> None:
    """What the calling thread moved the clock by, kept on its invocation (`own_time`)."""
    running = current()
    if running is None or not seconds:
        return
    moved, me = _moved(running[1]), threading.get_ident()
    moved[me] = moved.get(me, 0.0) + seconds


def _moved(visit: Any) -> dict[int, float]:
    """What each thread of an invocation moved the clock by (none known for a stand-in visit)."""
    moved = getattr(visit, "moved", None)
    return moved if isinstance(moved, dict) else {}


def _work_run(self: Any) -> None:
    """The pool's thread runs the work on the submitter's clock, in the submitter's invocation (whose context
    the work runs in: sessions.inherit_invocations)."""
    submitted = getattr(self, "_idem_submitted", None)
    if submitted is not None:
        set_own_time(submitted[1], submitted[0])
    try:
        _OWN_WORK_ITEM[1](self)
    finally:
        land()  # a call of the work's that never said it landed (boundary.take_off)
        if submitted is not None and isinstance(getattr(submitted[0], "pool_work", None), int):
            submitted[0].pool_work -= 1


def nothing_can_end_it() -> bool:
    """True if nothing of the calling thread's invocation can still set an event or put an item: every
    thread it started has ended (or died with its process, parked), its own thread too if the caller is
    not it, and no pool work it submitted is left (a pool's threads wait for work for good: they count by
    the work they run). Each of these, once true, stays true, so the answer
    does not depend on how real threads were scheduled."""
    running = current()
    visit = running[1] if running is not None else None
    if visit is None or not isinstance(getattr(visit, "threads", None), list) or visit.pool_work:
        return False
    me = threading.current_thread()
    return all(thread is me or not _ALIVE(thread) or getattr(thread, "_idem_parked", False)
               or getattr(thread, "_target", None) is _POOL_WORKER  # a pool's thread: its work is counted
               for thread in [*visit.threads, visit.thread] if thread is not None)


def _wait_out(ready: Any, condition: threading.Condition, timeout: float) -> None:
    """Wait (holding `condition`) until `ready()`, or nothing can end the wait (`nothing_can_end_it`), or
    `timeout` real seconds have passed, as Python's own wait would."""
    ends = _REAL_MONOTONIC() + timeout
    while not ready() and not nothing_can_end_it() and not _dead():
        left = ends - _REAL_MONOTONIC()
        if left <= 0:
            return
        condition.wait(min(_POLL, left))


def _dead() -> str:
    """Why the calling thread's process died, if it did (its other threads stop at their next boundary)."""
    running = current()
    dead = getattr(running[1], "dead", "") if running is not None else ""
    return dead if isinstance(dead, str) else ""


def _came(clock: Any, came: float | None) -> None:
    """A wait that saw what it waited for: the waiter's own clock is at least when that came."""
    if came is not None and came > own_time(clock):
        set_own_time(came)


def _timed_out(clock: Any, deadline: float) -> None:
    """A wait that timed out: the waiter's own clock reads its deadline, and the virtual clock moves there
    (time.sleep inside an invocation moves it) if it is not there already (another thread's slow call may
    have moved it further). A thread of a process that died meanwhile stops here, as at a boundary."""
    running = current()
    if running is not None and _dead() and getattr(running[1], "kill", None) is not None:
        running[1].kill(running[1].dead)  # never returns (idem.sim.runtime.invocation_thread._Run.die)
    left = deadline - float(clock.now())
    if left > 0:
        time.sleep(left)
    set_own_time(deadline)


@contextlib.contextmanager
def event_and_queue_waits(clock: Any) -> Iterator[None]:
    """While it lasts, inside an invocation, Event.wait and Queue.get with a timeout are judged on
    `clock` (see the module's docstring); everything is put back afterwards."""
    if threading.Event.wait is not _OWN_EVENT[2]:  # already inside (a concurrent copy)
        yield
        return

    def event_set(self: threading.Event) -> None:
        if not self._flag:
            self._idem_set_at = own_time(clock) if current() is not None else None  # type: ignore[attr-defined]
        _OWN_EVENT[0](self)

    def event_clear(self: threading.Event) -> None:
        self.__dict__.pop("_idem_set_at", None)
        _OWN_EVENT[1](self)

    def event_wait(self: threading.Event, timeout: float | None = None) -> bool:
        if timeout is None or current() is None:
            return _OWN_EVENT[2](self, timeout)
        deadline = own_time(clock) + timeout
        with self._cond:  # what is set, is set at once in real time (a slow call moved the clock)
            _wait_out(lambda: self._flag, self._cond, timeout)
            flag = self._flag
        came = getattr(self, "_idem_set_at", None)
        if flag and (came is None or came <= deadline):
            _came(clock, came)
            return True
        _timed_out(clock, deadline)
        return False

    def work_made(self: Any, *args: Any, **kwargs: Any) -> None:
        """A pool's work item, made as it is submitted: the submitter's own time goes with it."""
        _OWN_WORK_ITEM[0](self, *args, **kwargs)
        running = current()
        if running is not None:
            self._idem_submitted = (running[1], own_time(clock))
            if isinstance(getattr(running[1], "pool_work", None), int):
                running[1].pool_work += 1

    def queue_put(self: queue.Queue, item: Any) -> None:  # type: ignore[type-arg]
        times = self.__dict__.setdefault("_idem_put_at", collections.deque([None] * len(self.queue)))
        _OWN_QUEUE[0](self, item)
        times.append(own_time(clock) if current() is not None else None)

    def queue_get(self: queue.Queue) -> Any:  # type: ignore[type-arg]
        times = self.__dict__.get("_idem_put_at")
        if times and len(times) >= len(self.queue):
            times.popleft()
        return _OWN_QUEUE[1](self)

    def queue_get_on_clock(self: queue.Queue, block: bool = True, timeout: float | None = None) -> Any:  # type: ignore[type-arg]
        if not block or timeout is None or current() is None or type(self) is not queue.Queue:
            return _OWN_QUEUE[2](self, block, timeout)
        if timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        deadline = own_time(clock) + timeout
        with self.not_empty:
            _wait_out(self._qsize, self.not_empty, timeout)  # an item put comes at once in real time
            times = self.__dict__.get("_idem_put_at") or ()
            came = times[0] if self._qsize() and len(times) == len(self.queue) else None
            if self._qsize() and (came is None or came <= deadline):
                item = self._get()
                self.not_full.notify()
            else:
                item = _EMPTY
        if item is _EMPTY:
            _timed_out(clock, deadline)
            raise queue.Empty
        _came(clock, came)
        return item

    event, work = threading.Event, concurrent.futures.thread._WorkItem
    event.set, event.clear, event.wait = event_set, event_clear, event_wait  # type: ignore[method-assign]
    queue.Queue._put, queue.Queue._get, queue.Queue.get = queue_put, queue_get, queue_get_on_clock  # type: ignore[method-assign]
    work.__init__, work.run = work_made, _work_run  # type: ignore[method-assign]
    try:
        yield
    finally:
        work.__init__, work.run = _OWN_WORK_ITEM  # type: ignore[method-assign]
        queue.Queue._put, queue.Queue._get, queue.Queue.get = _OWN_QUEUE  # type: ignore[method-assign]
        event.set, event.clear, event.wait = _OWN_EVENT  # type: ignore[method-assign]


#: what a get that timed out holds instead of an item
_EMPTY = object()
