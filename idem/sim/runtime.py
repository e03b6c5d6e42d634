"""A local Lambda for asynchronous invocations, on a virtual clock.

What it reproduces from the Lambda service, and nothing more:
- an async queue: S3 hands the event over and gets no answer back;
- on a function error, up to `retries` (MaximumRetryAttempts, 0-2) more attempts, 60 s and then
  120 s after the failure by default, or as `retry_delay` says (idem.sim.delays), same event and id;
- events older than `max_event_age` (MaximumEventAgeInSeconds) are dropped;
- a function timeout (30 s by default) that sets the context's remaining time;
- containers: a warm one keeps its module globals between invocations, a cold one loads
  the entry module afresh; an invocation that arrives while all are busy gets a new one;
- the on-failure destination: an SQS queue receiving Lambda's invocation record.

It runs `idem.core.entry` exactly as Lambda would, against the moto resources of a LocalWorld.
Faults and concurrent copies happen at the function's boundaries (`idem.sim.boundary`):
its AWS calls, its provider calls, and the moment it returns. The handler knows nothing of them.
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import functools
import hashlib
import heapq
import importlib.util
import itertools
import json
import linecache
import os
import random
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import boto3
import time_machine

from .handler_guard import callable_problem
from .sdk_retries import install as install_sdk_retries
from .logtail import LogTail
from ..core.clock import iso8601
from .boundary import (CHARGE_CALL, current, END, STEP_BOUNDARIES, Boundary, Crossing, FaultPlan, Side, Step,
                       Visit, Watch, WatchedProvider, choice, every_session_watched, inherit_invocations,
                       watched_session)
from .world import ACCOUNT, REGION, LocalWorld

from .delays import RETRY_DELAYS, RetryDelay, documented_retry_delay  # noqa: F401 (RETRY_DELAYS: its readers)
DEFAULT_MAX_EVENT_AGE = 6 * 60 * 60


@dataclass
class Attempt:
    """One invocation of the function, as the runtime saw it."""

    delivery: int  # which copy of the event S3 delivered (2 = a duplicate)
    attempt: int  # 1 = first try, 2 and 3 = Lambda's retries
    request_id: str
    container: str
    cold: bool
    start: float  # seconds on the virtual clock since it started
    end: float = 0.0
    deadline: float = 0.0  # when Lambda stops it (seconds on the clock since it started)
    outcome: str = "running"  # ok, error, crash, timeout
    error: str = ""
    result: Any = None
    steps: list[tuple[float, str]] = field(default_factory=list)
    crossings: list[Crossing] = field(default_factory=list)  # every boundary it crossed
    calls: dict[str, int] = field(default_factory=dict)  # AWS calls by "service:Operation"
    logs: list[str] = field(default_factory=list)
    traceback: str = ""  # the handler's own, when it raised

    @property
    def dynamodb_calls(self) -> int:
        """Every DynamoDB call the function made: records, ledger entries, everything."""
        return sum(n for name, n in self.calls.items() if name.startswith("dynamodb:"))

    @property
    def failed(self) -> bool:
        return self.outcome != "ok"


@dataclass(order=True)
class _Pending:
    due: float
    seq: int
    event: dict = field(compare=False)
    delivery: int = field(compare=False)
    attempt: int = field(compare=False)
    request_id: str = field(compare=False)
    enqueued: float = field(compare=False)
    action: Callable[[], Any] | None = field(default=None, compare=False)  # not an invocation: do this


def work_of(event: dict[str, Any]) -> str:
    """The identity of the work an event asks for: every copy and retry of it shares it."""
    return hashlib.sha256(json.dumps(event, sort_keys=True).encode()).hexdigest()[:16]


class LambdaContext:
    """The context object Lambda passes to a handler, reading the virtual clock."""

    def __init__(self, request_id: str, function_name: str, deadline: float, clock: Any,
                 memory_mb: int = 256) -> None:
        self.aws_request_id = request_id
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "2026/01/01/[$LATEST]local"
        self._deadline = deadline
        self._clock = clock

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock.now()) * 1000))


class Container:
    """An execution environment: its own copy of the entry module and its globals."""

    def __init__(self, name: str, entry: str) -> None:
        self.name = name
        self.module = _load_fresh(entry)
        self.busy = False
        self.invocations = 0


def _load_fresh(module_name: str) -> ModuleType:
    """A new copy of the module (a dotted name, or a path to a .py file), as a cold start loads it:
    its top-level code runs again in fresh globals (compiled once per process)."""
    found = os.stat(module_name) if module_name.endswith(".py") else None
    stamp = (found.st_mtime_ns, found.st_size) if found else (0, 0)
    spec, code = _compiled(module_name, stamp)  # an edited file is compiled again
    module = importlib.util.module_from_spec(spec)
    # The function's own other modules (its helpers beside it) are imported afresh too, as in a
    # new process: a new execution environment's Init phase runs the function's static code
    # (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), so state one
    # of them keeps at module level (a cache, a remembered key) must not outlive the environment
    # that made it. Those its top level does not import again are put back.
    earlier = {name: sys.modules.pop(name) for name in _own_modules(module_name, spec)}
    # In sys.modules while its top level runs, as an import has it: a @dataclass (or pickle,
    # or typing) looks its module up there. The previous entry is put back afterwards.
    previous = sys.modules.get(spec.name)
    sys.modules[spec.name] = module
    try:
        exec(code, module.__dict__)
    finally:
        if previous is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = previous
        for name, kept in earlier.items():
            sys.modules.setdefault(name, kept)
    return module


def _own_modules(module_name: str, spec: Any) -> list[str]:
    """The modules already imported that are the function's own code besides its entry module:
    for a file, those in its folder (not an installed package there); for a dotted name, the rest
    of its top-level package, or, for a top-level module, those beside it. The workbook's own
    handlers (`idem.`) are left out: their helpers keep no state between invocations, and the check
    tells their errors by class, which a second copy of each module would make a different class."""
    top = spec.name.split(".")[0]
    if top == "idem":
        return []
    # read again only when a module was imported or dropped since (a cold start's fresh copies
    # replace the earlier ones under the same names)
    key = (module_name, spec.name, len(sys.modules))
    if key not in _OWN_FOUND:
        _OWN_FOUND.clear()
        _OWN_FOUND[key] = _find_own_modules(module_name, spec, top)
    return _OWN_FOUND[key]


_OWN_FOUND: dict[tuple[str, str, int], list[str]] = {}


def _find_own_modules(module_name: str, spec: Any, top: str) -> list[str]:
    if "." in spec.name and not module_name.endswith(".py"):
        return [name for name in list(sys.modules) if name != spec.name and name.split(".")[0] == top]
    entry = spec.origin or module_name
    # the folder as given and as resolved: a module's __file__ starts with the sys.path entry it
    # was found under, either one
    folders = tuple({os.path.dirname(os.path.abspath(entry)) + os.sep, os.path.dirname(os.path.realpath(entry)) + os.sep})

    def beside(loaded: Any) -> bool:
        where = getattr(loaded, "__file__", None)
        return isinstance(where, str) and where.startswith(folders) and not where.startswith(_OURS) \
            and "site-packages" not in where and "dist-packages" not in where

    return [name for name, loaded in list(sys.modules.items()) if name != spec.name and beside(loaded)]


@functools.lru_cache(maxsize=64)
def _compiled(module_name: str, stamp: tuple[int, int]) -> tuple[Any, Any]:
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
    else:
        spec = importlib.util.find_spec(module_name)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot find the entry module {module_name}")
    if spec.origin and spec.origin.endswith(".py"):
        # Compiled from its source here, not by the loader: under pytest, the plugin's entry point
        # puts idem's modules behind assertion rewriting, whose loader has no get_code.
        return spec, compile(Path(spec.origin).read_bytes(), spec.origin, "exec", dont_inherit=True)
    return spec, spec.loader.get_code(spec.name)  # type: ignore[attr-defined]


class HandlerExited(Exception):
    """The handler ended the process itself (sys.exit, os._exit is not caught): Lambda would
    report Runtime.ExitError; the check cannot say what the platform does next."""


class HandlerNotLoaded(Exception):
    """The handler's module failed at import (a syntax error, a missing package, an error in
    its top-level code). `handler_traceback` is the handler's own traceback."""

    def __init__(self, message: str, handler_traceback: str) -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


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


@contextlib.contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Refuse every socket to anything but the loopback while it lasts; yields the hosts refused.
    moto answers in-process, so a check needs no network: a call out is the handler's."""
    import ipaddress
    import socket

    refused: list[str] = []
    real_connect, real_connect_ex, real_getaddrinfo = (socket.socket.connect, socket.socket.connect_ex,
                                                       socket.getaddrinfo)

    def local(host: Any) -> bool:
        if not isinstance(host, str) or host in ("localhost", ""):
            return True  # a Unix socket's path is no host
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host.endswith(".localhost")

    def refuse(host: str) -> OSError:
        refused.append(host)
        return ConnectionRefusedError(f"idem check refuses a connection to {host}: only the loopback "
                                      "is reachable during a check")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not local(host.decode() if isinstance(host, bytes) else host):
            raise refuse(str(host))
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: Any, address: Any) -> Any:
        if isinstance(address, tuple) and not local(address[0]):
            raise refuse(str(address[0]))
        return real_connect(self, address)

    def connect_ex(self: Any, address: Any) -> Any:
        if isinstance(address, tuple) and not local(address[0]):
            raise refuse(str(address[0]))
        return real_connect_ex(self, address)

    socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex = getaddrinfo, connect, connect_ex  # type: ignore[method-assign,assignment]
    try:
        yield refused
    finally:
        socket.getaddrinfo = real_getaddrinfo
        socket.socket.connect, socket.socket.connect_ex = real_connect, real_connect_ex  # type: ignore[method-assign]


@contextlib.contextmanager
def _still() -> Iterator[Callable[[float], Any]]:
    yield lambda _when: None


_OURS = str(Path(__file__).resolve().parent.parent)


def handler_traceback(error: BaseException) -> str:
    """The traceback of `error` as the handler's own: the runtime's frames left out."""
    # as (file, line, function, text), read straight from the frames: without the column
    # carets, whose placing (traceback.extract_tb) walks each frame's code positions again (a
    # traceback per failed attempt, hundreds in a check)
    plain = [(frame.f_code.co_filename, line, frame.f_code.co_name,
              linecache.getline(frame.f_code.co_filename, line, frame.f_globals).strip())
             for frame, line in traceback.walk_tb(error.__traceback__)
             if not frame.f_code.co_filename.startswith(_OURS)
             or "/core/" in frame.f_code.co_filename]  # the workbook's own handlers are handlers too
    return ("Traceback (most recent call last):\n" + "".join(traceback.format_list(plain))
            + "".join(traceback.format_exception_only(type(error), error)))


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
              sleep: Callable[[float], None] | None = None) -> Iterator[None]:
    """What a function sees on Lambda, for a handler the runtime cannot wire itself: its
    settings in os.environ, boto3's default session (the watched one, on moto), every other
    boto3 session watched too (`every_session_watched`), and one clock: `time.time`,
    `datetime.now/utcnow/today` and the rest through time-machine
    (https://time-machine.readthedocs.io), and `time.monotonic`, which time-machine leaves
    alone, by hand, all reading the virtual clock. Everything is put back afterwards."""
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
    start = clock.now()
    time.monotonic = lambda: 1_000.0 + clock.now() - start  # type: ignore[assignment]
    time.monotonic_ns = lambda: int((1_000.0 + clock.now() - start) * 1e9)  # type: ignore[assignment]
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
                self.done.set()  # runs only when the thread was not parked (a parked one never ends)

        self.visit.kill = self.die
        self.thread = threading.Thread(target=main, name=name, daemon=True)
        _LIVE.add(self.thread)
        self.thread.start()
        try:
            self.done.wait()
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
        self.done.set()
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


class LocalLambda:
    def __init__(
        self,
        world: LocalWorld,
        env: dict[str, str],
        *,
        fault: FaultPlan | None = None,
        retries: int = 2,
        timeout: float = 30.0,
        max_event_age: float = DEFAULT_MAX_EVENT_AGE,
        reuse_containers: bool = True,
        function_name: str = "idem-charge",
        entry: str = "idem.core.entry",  # the module Lambda loads: its lambda_handler and App
        handler: str | None = None,  # or any handler, "module:function", wired as on Lambda
        provider_factory: str = "make_provider",  # the name a handler builds its provider with
        seed: int | None = None,
        memory_mb: int = 256,  # MemorySize, as the context tells the function
    ) -> None:
        if not 0 <= retries <= 2:
            raise ValueError(f"MaximumRetryAttempts is 0, 1 or 2; got {retries}")
        if not 60 <= max_event_age <= 21_600:
            raise ValueError(f"MaximumEventAgeInSeconds is 60-21600; got {max_event_age}")
        self.world = world
        self.clock = world.clock
        self.env = dict(env)
        self.retries = retries
        #: the attempt numbers n this run asked "may attempt n be retried?" (n <= retries): the
        #: only answers `retries` gave it (idem.explore.check runs a schedule once per answer)
        self.retries_asked: set[int] = set()
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_event_age = max_event_age
        self.retry_delay: RetryDelay = documented_retry_delay  # idem.sim.delays
        self.reuse_containers = reuse_containers
        self.function_name = function_name
        self.entry, self.function = (handler.rsplit(":", 1) if handler else (entry, "lambda_handler"))
        self.wired = handler is None  # the runtime builds the entry's App with its clock and ids
        self.provider_factory = provider_factory
        self.attempts: list[Attempt] = []
        self.containers: list[Container] = []
        self._containers_started = 0
        self._queue: list[_Pending] = []
        self._seq = itertools.count()
        self._deliveries = 0
        # Request ids and owner tokens: the same every run, different for each runtime of a world.
        world.runtimes_started += 1
        self._random = random.Random(f"{world.prefix}/{world.runtimes_started if seed is None else seed}")
        self._running: list[Attempt] = []
        # a handler the check runs (not the workbook's wired entry) meets botocore's own errors
        self.watch = Watch(fault, self.clock, aws_errors=handler is not None)
        if handler is not None:  # a lost answer after an AWS call is resent by botocore (sdk_retries)
            install_sdk_retries(current, Crossing)
        # The function's session: watched at its boundaries (a deployed stack's world may aim it
        # at an emulator's endpoint).
        self.session = world.function_session() if hasattr(world, "function_session") else watched_session()
        self.provider = WatchedProvider(world.provider(self.clock))
        self.watch.provider = self.provider

    # -- what S3 does ------------------------------------------------------------------
    def send(self, event: dict[str, Any], *, at: float | None = None) -> int:
        """Queue an async invocation (S3 delivering an event). Returns the delivery number."""
        self._deliveries += 1
        due = self.clock.now() if at is None else self.clock.start + at
        heapq.heappush(self._queue, _Pending(due, next(self._seq), copy.deepcopy(event),
                                             self._deliveries, 1, self._new_id(), due))
        return self._deliveries

    def at(self, seconds: float, action: Callable[[], Any]) -> None:
        """Do `action` when the clock reaches `seconds` after its start (something outside the
        function happens then, such as a second upload landing between two attempts)."""
        due = self.clock.start + seconds
        heapq.heappush(self._queue, _Pending(due, next(self._seq), {}, 0, 0, "", due, action))

    def send_now(self, event: dict[str, Any]) -> int:
        """Deliver a copy of the event and run it at once, even while another invocation
        is in the middle of its work: a concurrent duplicate."""
        self._deliveries += 1
        pending = _Pending(self.clock.now(), next(self._seq), copy.deepcopy(event),
                           self._deliveries, 1, self._new_id(), self.clock.now())
        self._invoke(pending)
        return pending.delivery

    def during(self, step: str | Boundary, action: Callable[[], Any], *, delivery: int = 1,
               attempt: int = 1, in_flight: bool = False) -> None:
        """Run `action` once, when that invocation reaches `step` (a Step name or a Boundary).
        `in_flight`: the call at `step` is slow, and `action` runs while it is in flight
        (see `in_flight`)."""
        at = step if isinstance(step, Boundary) else STEP_BOUNDARIES[choice(Step, step)]
        if in_flight:
            self.watch.at(at, lambda: self.in_flight(at, action), delivery=delivery, attempt=attempt)
        else:
            self.watch.at(at, action, delivery=delivery, attempt=attempt)

    def in_flight(self, at: Boundary, action: Callable[[], Any] = lambda: None) -> float:
        """The running invocation's call at `at` is slow: it stays in flight until 1 s before
        the invocation's deadline (as long as a call can take and the invocation still finish).
        Before the call (`before X`) its request is out and being worked on (a provider call's
        idempotency key is held: a request with the same key gets 409, as Stripe answers); after
        it (`after X`) the call did its work and its answer is on the way. Meanwhile the clock
        moves, every invocation that falls due runs (a duplicate, another copy's retry), and then
        `action` (a concurrent copy). Returns the seconds the call took."""
        running = self._running[-1]
        seconds = max(0.0, self.clock.start + running.deadline - 1.0 - self.clock.now())
        held = self.provider.sending if at.call == CHARGE_CALL and at.side is Side.BEFORE else None
        if held:
            self.provider.held.add(held)
        try:
            self.advance(seconds)
            action()
        finally:
            self.provider.held.discard(held or "")
        return seconds

    def advance(self, seconds: float) -> None:
        """Move the clock inside an invocation, with every clock the process reads, and run the
        invocations that fall due meanwhile, concurrently with the one in flight."""
        until = self.clock.now() + seconds
        while self._queue and self._queue[0].due <= until:
            pending = heapq.heappop(self._queue)
            self._to(pending.due)
            self._start(pending)
        self._to(until)

    def _to(self, when: float) -> None:
        self.clock.advance_to(when)
        move_clocks(self.clock.now())

    # -- what the Lambda service does -------------------------------------------------
    def run(self) -> list[Attempt]:
        """Process the queue until it is empty, moving the clock to each due time. For a
        handler the runtime does not wire, every clock in the process reads the virtual one
        while it runs (time-machine), moto's timestamps included, so a message a handler sends
        and the failure queue's records carry the same time (read them back `on_clock`)."""
        with on_clock(self.clock) if not self.wired else _still() as move:
            return self._run(move)

    def _run(self, move: Callable[[float], Any]) -> list[Attempt]:
        while self._queue:
            pending = heapq.heappop(self._queue)
            self.clock.advance_to(pending.due)
            move(self.clock.now())
            self._start(pending)
        return self.attempts

    def _start(self, pending: _Pending) -> None:
        if pending.action is not None:
            pending.action()
        elif self.clock.now() - pending.enqueued > self.max_event_age:
            self._to_destination(pending, "EventAgeExceeded", None)
        else:
            self._invoke(pending)

    def _invoke(self, pending: _Pending) -> Attempt:
        """One invocation, in a thread of its own (`_Run`): the caller waits until it returns,
        raises, or dies. A crash is a kill: the thread that reaches the fatal boundary stops there
        for good (no except, no finally, no atexit of the handler runs), and the container is gone."""
        container, cold = self._acquire()
        deadline = self.clock.now() + self.timeout
        attempt = Attempt(pending.delivery, pending.attempt, pending.request_id,
                          container.name, cold, round(self.clock.t, 3),
                          deadline=round(self.clock.t + self.timeout, 3))
        self.attempts.append(attempt)
        self._running.append(attempt)
        context = LambdaContext(pending.request_id, self.function_name, deadline, self.clock, self.memory_mb)
        visit = Visit(pending.delivery, pending.attempt, self.work_of(pending.event), deadline=deadline)
        run = _Run(visit)
        event = copy.deepcopy(pending.event)

        def body() -> None:
            with self.watch.visiting(visit):
                function = getattr(container.module, self.function)
                result = function(event, context)
                self.watch.arrive(visit, END)  # a fault here: an error after the last write
            attempt.result = result

        try:
            with self._environment(), self._output(attempt):
                run.start(body, f"idem-{self.function_name}-{pending.delivery}.{pending.attempt}")
            if run.died and run.timed_out:
                attempt.outcome = "timeout"
                attempt.error = f"Sandbox.Timedout: Task timed out after {self.timeout:.2f} seconds"
                container.module = None  # Lambda resets the environment after a timeout
            elif run.died:
                attempt.outcome, attempt.error = "crash", f"Runtime.ExitError: {run.died}"
                container.module = None  # the process is gone: this container is never reused
            elif isinstance(run.raised, SystemExit):
                container.module = None
                raise HandlerExited(f"the handler called sys.exit({run.raised.code!r}) on delivery "
                                    f"{pending.delivery}, attempt {pending.attempt}") from None
            elif isinstance(run.raised, Exception):  # the function's error, as Lambda reports it
                error = run.raised
                attempt.outcome, attempt.error = "error", f"{type(error).__name__}: {error}"
                attempt.traceback = handler_traceback(error)
            elif run.raised is not None:
                raise run.raised
            else:
                attempt.outcome = "ok"
        finally:
            self._running.pop()
            attempt.steps, attempt.crossings = visit.steps, visit.crossings
            attempt.calls = dict(visit.calls)
            container.busy = False
        if attempt.outcome == "ok" and self.clock.now() > deadline:
            attempt.outcome = "timeout"
            attempt.error = f"Sandbox.Timedout: Task timed out after {self.timeout:.2f} seconds"
            container.module = None  # Lambda resets it after a timeout (Lambda guide: lambda-runtime-environment)
        attempt.end = round(self.clock.t, 3)
        if attempt.failed:
            self.after_failure(pending, attempt)
        return attempt

    def work_of(self, event: dict[str, Any]) -> str:
        """The work an invocation does (a trigger's runtime may group several events as one)."""
        return work_of(event)

    def after_failure(self, pending: _Pending, attempt: Attempt) -> None:
        self.retries_asked.add(pending.attempt)
        if pending.attempt <= self.retries:
            delay = self.retry_delay(pending.attempt, self.clock.now() - pending.enqueued)
            heapq.heappush(self._queue, _Pending(self.clock.now() + delay, next(self._seq), pending.event,
                                                 pending.delivery, pending.attempt + 1, pending.request_id, pending.enqueued))
        else:
            self._to_destination(pending, "RetriesExhausted", attempt)

    def _acquire(self) -> tuple[Container, bool]:
        self.containers = [c for c in self.containers if c.module is not None]
        if self.reuse_containers:
            for container in self.containers:
                if not container.busy:
                    container.busy = True
                    container.invocations += 1
                    return container, False
        self._containers_started += 1
        try:
            with self._environment():
                container = Container(f"c{self._containers_started}", self.entry)
        except SystemExit as exiting:
            raise HandlerExited(f"the handler's module called sys.exit({exiting.code!r}) at import") from None
        except Exception as error:
            raise HandlerNotLoaded(f"{self.entry} fails at import: {type(error).__name__}: {error}",
                                   handler_traceback(error)) from None
        if not self.wired and (problem := callable_problem(container.module, self.function)):
            raise HandlerNotLoaded(problem, "")  # Lambda calls it with (event, context): it cannot be
        if self.wired:
            container.module._app = container.module.App.from_environment(
                self.env, session=self.session, clock=self.clock, provider=self.provider,
                new_token=self._new_id, log=self._log)
        elif hasattr(container.module, self.provider_factory):
            setattr(container.module, self.provider_factory, lambda *_, **__: self.provider)
        container.busy = True
        container.invocations = 1
        self.containers.append(container)
        return container, True

    @contextlib.contextmanager
    def _output(self, attempt: Attempt) -> Iterator[None]:
        """A handler the runtime does not wire prints its logs: they become the attempt's."""
        if self.wired:
            yield
            return
        printed = LogTail()  # the last lines only, however much it prints (idem.sim.logtail)
        try:
            with contextlib.redirect_stdout(printed):
                yield
        finally:
            attempt.logs.extend(printed.lines())

    def _environment(self) -> Any:
        return contextlib.nullcontext() if self.wired else as_lambda(self.env, self.clock, self.session,
                                                                     sleep=self.sleep)

    def sleep(self, seconds: float) -> None:
        """`time.sleep` inside an invocation (the handler's, or botocore's between its retries): the
        virtual clock moves, and every invocation that falls due meanwhile runs (`advance`). A
        sleep past the invocation's deadline ends it there, as Lambda does: Sandbox.Timedout, the
        environment reset, no finally run (`_Run.die`)."""
        running = current()
        if running is None or seconds <= 0:
            return
        visit = running[1]
        if visit.deadline and self.clock.now() + seconds >= visit.deadline:
            self.advance(max(0.0, visit.deadline - self.clock.now()))
            if visit.kill is not None:
                visit.dead = "timed out"
                visit.kill("timed out", True)  # type: ignore[call-arg]
        self.advance(seconds)

    def _log(self, line: str) -> None:
        if self._running:
            self._running[-1].logs.append(line)

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def _to_destination(self, pending: _Pending, condition: str, attempt: Attempt | None) -> None:
        """Send Lambda's invocation record to the on-failure destination (an SQS queue)."""
        error_type, _, message = (attempt.error if attempt else "").partition(": ")
        record = {
            "version": "1.0",
            "timestamp": iso8601(self.clock.now()),
            "requestContext": {
                "requestId": pending.request_id,
                "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}:$LATEST",
                "condition": condition,
                "approximateInvokeCount": pending.attempt if attempt else pending.attempt - 1,
            },
            "requestPayload": pending.event,
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST",
                                "functionError": "Unhandled"},
            "responsePayload": {"errorType": error_type, "errorMessage": message},
        }
        self.world.send_to_queue(self.world.queue_url, json.dumps(record))
