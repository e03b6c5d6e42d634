"""Inside the sandbox's child: what the handler does to the process (os._exit, non-daemon threads,
SIGALRM timers), told to the parent as notes, and a heartbeat while invocations finish."""
from __future__ import annotations

import json
import os
import signal
import sys
import sysconfig
import threading
import time
from pathlib import Path
from typing import Any, Callable

#: Real seconds a non-daemon thread the handler started may outlive the invocation that started it.
THREAD_GRACE = 5.0
BEAT, NOTE = b"\x01", b"\x02"
#: The idem package's own folder: its machinery is not the handler's code.
IDEM = str(Path(__file__).resolve().parent.parent.parent)
_STDLIB = tuple(p for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p)


class Guard:
    """Inside the child: notes what the handler does to the process (os._exit, non-daemon
    threads, SIGALRM timers) and beats while invocations finish."""

    def __init__(self, fd: int, root: str) -> None:
        self.fd, self.root = fd, root
        self.real_exit = os._exit
        self.threads: list[tuple[threading.Thread, float, str]] = []
        self._last_beat = 0.0
        self._clock = time.perf_counter  # the real one, taken now (the runtime moves perf_counter too)
        self._monitor_pid = 0
        self._alarm_noted = False

    # where the handler is, in the stack that called us
    def where(self) -> str:
        """The innermost frame of the handler's own code (not the standard library, not idem's
        machinery), as file:line; "" if none is on the stack."""
        frame = sys._getframe(2)  # (not this frame, nor the guard's that asks)
        while frame is not None:  # the frames themselves: no source lines read
            if _handler_file(frame.f_code.co_filename):
                return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
            frame = frame.f_back
        return ""

    def note(self, **fields: Any) -> None:
        try:
            os.write(self.fd, NOTE + json.dumps(fields).encode() + b"\n")
        except OSError:
            pass

    def beat(self) -> None:
        now = self._clock()
        if now - self._last_beat > 0.2:
            self._last_beat = now
            try:
                os.write(self.fd, BEAT)
            except OSError:
                pass

    def install(self) -> None:
        guard = self

        def exit_recorded(code: int) -> None:
            where = guard.where()
            if where:
                guard.note(kind="exit", how="os._exit", code=code, where=where)
            guard.real_exit(code)

        os._exit = exit_recorded  # type: ignore[assignment]

        real_start = threading.Thread.start

        def start(thread: threading.Thread) -> None:
            real_start(thread)
            if thread.daemon or _idle_pool_worker(thread):  # (the runtime's invocation threads are daemons)
                return
            where = guard.where()
            if where:
                guard.threads.append((thread, guard._clock(), where))
                guard._watch_threads()

        threading.Thread.start = start  # type: ignore[method-assign]

        real_signal, real_alarm, real_setitimer = signal.signal, signal.alarm, signal.setitimer

        def noted(how: str, refused: bool = False) -> None:
            where = guard.where()
            if where and not guard._alarm_noted:
                guard._alarm_noted = True
                guard.note(kind="alarm", how=how, where=where, refused=refused)

        def signal_(signum: int, handler: Any) -> Any:
            if signum == signal.SIGALRM:
                # the runtime runs each invocation in a thread of its own (idem.sim.runtime._Run),
                # where Python refuses a signal handler: on Lambda it is the main thread's
                noted("signal.signal(SIGALRM, ...)",
                      refused=threading.current_thread() is not threading.main_thread())
            return real_signal(signum, handler)

        def alarm(seconds: int) -> int:
            noted(f"signal.alarm({seconds})")
            return real_alarm(seconds)

        def setitimer(which: int, seconds: float, interval: float = 0.0) -> Any:
            if which == signal.ITIMER_REAL:
                noted(f"signal.setitimer(ITIMER_REAL, {seconds})")
            return real_setitimer(which, seconds, interval)

        signal.signal, signal.alarm, signal.setitimer = signal_, alarm, setitimer  # type: ignore[assignment]
        self._beat_on_invocations()
        self.beat()  # started: from now on, `stall` seconds without a beat is a hang

    def _beat_on_invocations(self) -> None:
        """A beat each time an invocation or a batch of schedules finishes."""
        from ...sim import runtime
        from ..run import runner

        def beating(function: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                try:
                    return function(*args, **kwargs)
                finally:
                    self.beat()
            return call

        for owner, name in ((runtime.LocalLambda, "_invoke"), (runner, "run_batch")):
            if callable(getattr(owner, name, None)):
                setattr(owner, name, beating(getattr(owner, name)))

    def _watch_threads(self) -> None:
        """One daemon thread per process that notes a handler's thread still running
        THREAD_GRACE real seconds after it started."""
        if self._monitor_pid == os.getpid():
            return
        self._monitor_pid = os.getpid()

        def watch() -> None:
            while True:
                time.sleep(0.5)
                left = self.left_running(THREAD_GRACE)
                if left:
                    thread, where = left[0]
                    self.note(kind="thread", name=thread.name, where=where)
                    return

        threading.Thread(target=watch, name="idem-thread-watch", daemon=True).start()

    def left_running(self, grace: float = 0.0) -> list[tuple[threading.Thread, str]]:
        now = self._clock()
        return [(t, where) for t, started, where in self.threads if t.is_alive() and now - started >= grace]


def _handler_file(filename: str) -> bool:
    """Whether a frame's file is the handler's (or its libraries'): not the standard library,
    not idem's machinery (idem/core's handlers are handlers)."""
    if filename.startswith("<") or filename.startswith(_STDLIB):
        return False
    if filename.startswith(IDEM):
        return f"{os.sep}core{os.sep}" in filename
    return True


def _idle_pool_worker(thread: threading.Thread) -> bool:
    """concurrent.futures' workers idle between tasks until their pool shuts down: no work left."""
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", "") == "concurrent.futures.thread"
