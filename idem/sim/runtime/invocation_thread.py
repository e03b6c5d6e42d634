"""One invocation's thread: a crash is a kill (the thread is parked for good at the fatal boundary),
and a schedule is bounded in real time (a handler that waits for a clock that never moves)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from ..boundary import Visit, land, settle, stopped


class ScheduleTimedOut(BaseException):
    """A schedule ran past its bound in real time (a handler waiting on a clock that only moves
    when the runtime moves it): not an Exception, so the handler's except clauses let it by."""


@contextlib.contextmanager
def schedule_deadline(seconds: float, what: str) -> Iterator[None]:
    """Bound one schedule in real time (SIGALRM, where this is the main thread of a POSIX process)."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(*_: Any) -> None:
        raise ScheduleTimedOut(f"a schedule ran {seconds:.0f} s of real time without finishing ({what}): "
                               "does the handler wait for the clock to move, or loop forever?")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Run:
    """One invocation's thread, as the code that started it sees it.

    Why a thread: a crash must be a kill. An exception, even a BaseException the handler's
    `except Exception` lets by, still runs every `finally` and `with` exit on its way out, so a
    lock released in `finally` never shows as left behind. Python cannot end a thread from outside
    without running them either; a thread that simply never runs again can. So the invocation runs
    in its own (daemon) thread, the caller waits for it, and a crash parks the thread at the fatal
    boundary for good (`die`): nothing after that point of the handler runs, ever. A child process
    killed with SIGKILL would be as sound but costs a fork and moto's state per invocation; a
    greenlet cannot be parked once the handler waits on its own worker threads (the one OS thread
    would block). A parked thread costs its stack until the process ends; the check's worker
    processes end with each check.
    """

    def __init__(self, visit: Visit) -> None:
        self.visit = visit
        self.done = threading.Event()
        self.died = ""  # why the process died, if it did
        self.timed_out = False
        self.raised: BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self, body: Callable[[], Any], name: str) -> None:
        """Run `body` in a new thread and wait until it returns, raises or dies."""
        def main() -> None:
            try:
                body()
            except BaseException as error:  # noqa: B036 - carried to the caller, which decides
                if not self.done.is_set():
                    self.raised = error
            finally:
                land()  # a call of its own that never said it landed
                self.done.set()  # runs only when the thread was not parked (a parked one never ends)

        self.visit.kill = self.die
        self.thread = self.visit.thread = threading.Thread(target=main, name=name, daemon=True)
        self.thread._idem_runtime = True  # type: ignore[attr-defined]  # the runtime's, not the handler's (sessions)
        _LIVE.add(self.thread)
        self.thread.start()
        try:
            self.done.wait()
            if self.died:  # its other threads: what they sent lands now, not in a later schedule (boundary.settle)
                settle(self.visit)
        except BaseException:  # the schedule's real-time bound rang: stop every invocation thread too
            for thread in list(_LIVE):
                _stop(thread)
            raise
        finally:
            _LIVE.discard(self.thread)

    def die(self, why: str, timed_out: bool = False) -> None:
        """The process died here: tell the caller, then never run again (see the class docstring).
        `timed_out`: Lambda stopped it at its deadline (the environment is reset the same way)."""
        if not self.died:
            self.died, self.timed_out = why, timed_out
        self.visit.dead = self.visit.dead or why  # its other threads stop at their next boundary
        stopped(self.visit)  # a parked thread is busy no more (boundary.settle)
        self.done.set()
        threading.current_thread()._idem_parked = True  # type: ignore[attr-defined]  # (thread_waits)
        _parked.append(_unjoined(threading.current_thread()))
        threading.Event().wait()  # forever: no frame above this one ever resumes


def _unjoined(thread: threading.Thread) -> threading.Thread:
    """Let the process end with `thread` parked: a handler's own non-daemon thread (a pool's worker
    is one) is joined at exit by threading and by concurrent.futures, which would wait forever.
    (CPython's own bookkeeping: its shutdown locks and the pools' thread registry.)"""
    import concurrent.futures.thread as pools

    pools._threads_queues.pop(thread, None)  # type: ignore[attr-defined]
    lock = getattr(thread, "_tstate_lock", None)
    registry, guard = getattr(threading, "_shutdown_locks", None), getattr(threading, "_shutdown_locks_lock", None)
    if lock is not None and registry is not None and guard is not None:
        with guard:
            registry.discard(lock)
    return thread


#: Invocation threads running now, and those a crash parked for good.
_LIVE: set[threading.Thread] = set()
_parked: list[threading.Thread] = []


def _stop(thread: threading.Thread) -> None:
    """Raise ScheduleTimedOut in a thread that ran past the schedule's bound (it may be spinning)."""
    import ctypes

    if thread.ident is not None and thread.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(ScheduleTimedOut))
