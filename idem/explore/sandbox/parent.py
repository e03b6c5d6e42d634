"""`idem check` in a child process the handler cannot end, hang or silence.

The parent (`run_sandboxed`, the CLI's side) starts `python -m idem.explore.sandbox` in a session
of its own and watches it: the child runs `check_handler` and writes its answer to a file; the
parent prints it. Whatever the handler does, the parent answers within a bounded time:

- it ends its process (`os._exit`, any code; a signal): exit 3, naming the call and where;
- it leaves a non-daemon thread running after its invocations: exit 3 (on Lambda the thread
  is frozen with the execution environment and runs on inside later invocations);
- no invocation finishes for `stall` seconds of real time (a loop, a lock, a wait on a clock
  only the check moves, a SIGALRM timer of its own that replaced the check's): exit 3, killed;
- it sets a SIGALRM handler of its own inside an invocation (which runs in a thread of the
  check's, where Python refuses one; Lambda's runs in the main thread): exit 3, naming the call;
- the whole check runs past `budget` seconds: exit 3, killed.

What the child prints goes to pipes the parent drains, keeping only the last lines
(`idem.sim.runtime.logtail` bounds what each invocation prints inside the child). The child's
reports of what the handler did (notes) and its heartbeats come over a pipe of their own.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..report.schema import error_json
from .guard import BEAT, IDEM, NOTE, THREAD_GRACE

#: Real seconds with no invocation finished before the check gives up (the engine's own bound
#: on one schedule, `runner.SCHEDULE_SECONDS`, is 60 s and speaks first when it can).
STALL_SECONDS = 90.0
#: Real seconds the child may take to start (import moto, botocore's models) before its first beat.
STARTUP_SECONDS = 120.0
#: Real seconds the whole check may take (`--budget`).
BUDGET_SECONDS = 900.0
#: Bytes of the child's own stdout and stderr kept (the handler's prints outside an invocation).
TAIL_BYTES = 16_384


@dataclass
class Outcome:
    """What the check answered, or what the watchdog found instead."""

    exit_code: int
    json: dict[str, Any]
    text: str = ""  # the report (exit 0/1) or the one-line error (2/3)
    handler_traceback: str = ""
    output: list[str] = field(default_factory=list)  # the last lines the child printed


class _Tail:
    """The last `limit` bytes of a pipe, drained in a thread so the child never blocks on it."""

    def __init__(self, stream: Any, limit: int = TAIL_BYTES) -> None:
        self.data, self.limit, self.total = b"", limit, 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: Any) -> None:
        while chunk := stream.read1(1 << 20) if hasattr(stream, "read1") else stream.read(1 << 20):
            self.total += len(chunk)
            self.data = (self.data + chunk[-self.limit:])[-self.limit:]

    def lines(self, n: int = 5) -> list[str]:
        self._thread.join(timeout=1.0)
        return self.data.decode("utf-8", "replace").splitlines()[-n:]


class _Notes:
    """The child's heartbeats and notes, read from their pipe in a thread."""

    def __init__(self, fd: int) -> None:
        self.last_beat = time.monotonic()
        self.heard = False  # the child has started the check (its first beat)
        self.notes: list[dict[str, Any]] = []
        self._buffer = b""
        self._thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self.last_beat, self.heard = time.monotonic(), True
                self._buffer += chunk.replace(BEAT, b"")
                while NOTE in self._buffer and b"\n" in self._buffer.split(NOTE, 1)[1]:
                    _, rest = self._buffer.split(NOTE, 1)
                    line, self._buffer = rest.split(b"\n", 1)
                    try:
                        self.notes.append(json.loads(line))
                    except ValueError:
                        pass

    def join(self) -> None:
        self._thread.join(timeout=2.0)  # the pipe ends when the child and its workers are gone

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((n for n in list(self.notes) if n.get("kind") == kind), None)


def run_sandboxed(request: dict[str, Any], *, budget: float = BUDGET_SECONDS,
                  stall: float = STALL_SECONDS) -> Outcome:
    """Run the check `request` describes in a child process and watch it (see the module)."""
    with tempfile.TemporaryDirectory(prefix="idem-check-") as scratch:
        answer = Path(scratch) / "answer.json"
        request = {**request, "answer": str(answer)}
        (Path(scratch) / "request.json").write_text(json.dumps(request))
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(IDEM).parent), *filter(None, [env.get("PYTHONPATH")])])
        env.setdefault("PYTHONUNBUFFERED", "1")
        child = subprocess.Popen(  # noqa: S603 (this interpreter, this package)
            [sys.executable, "-m", "idem.explore.sandbox", str(Path(scratch) / "request.json"), str(write_fd)],
            cwd=os.getcwd(), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        notes, out, err = _Notes(read_fd), _Tail(child.stdout), _Tail(child.stderr)
        started = time.monotonic()
        verdict: str = ""
        try:
            while child.poll() is None:
                time.sleep(0.1)
                now = time.monotonic()
                exited = notes.first("exit")
                if exited and now - exited.setdefault("_seen", now) > 1.0:
                    verdict = "exit"  # a pool worker ended itself: its batch never comes back
                elif notes.first("thread"):
                    verdict = "thread"
                elif now - notes.last_beat > (stall if notes.heard else stall + STARTUP_SECONDS):
                    verdict = "stall"
                elif now - started > budget:
                    verdict = "budget"
                if verdict:
                    _kill(child)
                    break
        except BaseException:
            _kill(child)
            raise
        child.wait()
        notes.join()
        output = err.lines() + out.lines()
        alarm = notes.first("alarm")
        if not verdict and alarm and alarm.get("refused"):
            verdict = "alarm"  # its invocations failed where Lambda's would not: no answer to judge
        if not verdict and answer.exists():
            got = json.loads(answer.read_text())
            return Outcome(got["exit_code"], got["json"], got["text"], got.get("handler_traceback", ""), output)
        message = _what_happened(verdict, child.returncode, notes, stall, budget, output)
        return Outcome(3, error_json(3, message), message, "", output)


def _kill(child: subprocess.Popen[bytes]) -> None:
    """End the child and every process it started (its session's group)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


#: What Lambda does when a function's process ends during an invocation
#: (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html: the runtime
#: process exiting is reported as Runtime.ExitError, and the environment is reset).
LAMBDA_ON_EXIT = ("on Lambda the invocation fails with Runtime.ExitError and the execution environment "
                  "is reset (an asynchronous event is retried)")
LAMBDA_ON_HANG = ("on Lambda the clock moves, so a wait on it ends, and a loop is ended by the function's "
                  "timeout (Sandbox.Timedout), the event retried")


def _what_happened(verdict: str, code: int | None, notes: _Notes, stall: float, budget: float,
                   output: list[str]) -> str:
    """One line: what the handler did, what Lambda would do, that the check cannot judge it."""
    exited, thread, alarm = notes.first("exit"), notes.first("thread"), notes.first("alarm")
    if verdict == "thread" and thread:
        return (f"the handler started a non-daemon thread ({thread['name']}, at {thread['where']}) that was "
                f"still running {THREAD_GRACE:.0f} s of real time after it started, outside any invocation: on "
                "Lambda it is frozen with the execution environment when an invocation returns and runs on "
                "inside later ones (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), "
                "so its work belongs to no invocation and the check cannot judge it; finish the work inside the "
                "invocation (join the thread before returning)")
    if exited:
        return (f"the handler ended its own process with {exited['how']}({exited['code']!r}) at {exited['where']}: "
                f"{LAMBDA_ON_EXIT}; the check cannot judge a function that ends its process: raise an exception "
                "instead")
    if verdict == "alarm" and alarm:
        return (f"the handler set its own SIGALRM timer ({alarm['how']} at {alarm['where']}): on Lambda the "
                "handler runs in the runtime's main thread, where a signal handler can be set; the check runs "
                "each invocation in a thread of its own (so a crash can stop it at any call), where Python "
                "refuses one (ValueError: signal only works in main thread), and its timer would replace the "
                "check's bound on a schedule; the check cannot judge it: bound the wait with "
                "context.get_remaining_time_in_millis() instead of a signal")
    if verdict in ("stall", "budget"):
        how_long = (f"no invocation finished for {stall:.0f} s of real time" if verdict == "stall"
                    else f"the check ran past its budget of {budget:.0f} s of real time (--budget)")
        if alarm:
            return (f"the handler set its own SIGALRM timer ({alarm['how']} at {alarm['where']}), which replaces "
                    f"the check's bound on a schedule, and then {how_long}: it waits on a clock that only the "
                    f"check moves (time.time) or loops; {LAMBDA_ON_HANG}; the check cannot judge it: bound the "
                    "wait with context.get_remaining_time_in_millis() instead of a signal")
        if verdict == "budget":  # invocations kept finishing (else the stall bound would have spoken)
            return (f"{how_long} before it finished: give it a larger --budget (the whole check of a handler "
                    "that holds takes longer than its clean run, a few seconds to minutes); if it still runs past, "
                    "the handler may hang (a loop, a lock, or a wait on time.time, a clock the check moves only "
                    "between calls)")
        return (f"{how_long}: the handler hangs (a loop, a lock, or a wait on time.time, a clock the check "
                f"moves only between calls); {LAMBDA_ON_HANG}; the check cannot judge it")
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
        return (f"the check's process was killed by {name} before it answered (the handler, or the machine "
                f"running out of memory): {LAMBDA_ON_EXIT}")
    said = f" (its last output: {output[-1][:200]})" if output else ""
    return (f"the check's process ended with exit code {code} before it answered: the handler ended it "
            f"(os._exit, or a library it calls){said}; {LAMBDA_ON_EXIT}")
