"""A local Lambda for asynchronous invocations, on a virtual clock.

What it reproduces from the Lambda service, and nothing more:
- an async queue: S3 hands the event over and gets no answer back;
- on a function error, up to `retries` (MaximumRetryAttempts, 0-2) more attempts, about
  60 s and then 120 s after the failure, with the same event and request id;
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

import contextlib
import copy
import functools
import hashlib
import heapq
import importlib.util
import io
import itertools
import json
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import boto3

from ..core.clock import iso8601
from .boundary import (END, STEP_BOUNDARIES, Boundary, Crash, Crossing, FaultPlan, Step, Visit, Watch,
                       WatchedProvider, choice, watched_session)
from .world import ACCOUNT, REGION, LocalWorld

RETRY_DELAYS = (60.0, 120.0)  # after the first failure, then after the second
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
    outcome: str = "running"  # ok, error, crash, timeout
    error: str = ""
    result: Any = None
    steps: list[tuple[float, str]] = field(default_factory=list)
    crossings: list[Crossing] = field(default_factory=list)  # every boundary it crossed
    calls: dict[str, int] = field(default_factory=dict)  # AWS calls by "service:Operation"
    logs: list[str] = field(default_factory=list)

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
    saved = sys.modules.get(spec.name)
    sys.modules[spec.name] = module  # dataclasses read their module's globals while a class is made
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules.pop(spec.name) if saved is None else sys.modules.__setitem__(spec.name, saved)
    return module


@functools.lru_cache(maxsize=64)
def _compiled(module_name: str, stamp: tuple[int, int]) -> tuple[Any, Any]:
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
    else:
        spec = importlib.util.find_spec(module_name)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot find the entry module {module_name}")
    return spec, spec.loader.get_code(spec.name)


@contextlib.contextmanager
def as_lambda(env: dict[str, str], clock: Any, session: Any) -> Iterator[None]:
    """What a function sees on Lambda, for a handler the runtime cannot wire itself: its
    settings in os.environ, boto3's default session (the watched one, on moto) and the
    wall clock (`time.time`, on the virtual clock). Everything is put back afterwards."""
    saved_env = {name: os.environ.get(name) for name in env}
    saved = (boto3.DEFAULT_SESSION, time.time, time.time_ns)
    os.environ.update(env)
    boto3.DEFAULT_SESSION = session
    time.time = clock.now
    time.time_ns = lambda: int(clock.now() * 1e9)
    try:
        yield
    finally:
        boto3.DEFAULT_SESSION, time.time, time.time_ns = saved
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    ) -> None:
        if not 0 <= retries <= 2:
            raise ValueError(f"MaximumRetryAttempts is 0, 1 or 2; got {retries}")
        if not 60 <= max_event_age <= 21_600:
            raise ValueError(f"MaximumEventAgeInSeconds is 60-21600; got {max_event_age}")
        self.world = world
        self.clock = world.clock
        self.env = dict(env)
        self.retries = retries
        self.timeout = timeout
        self.max_event_age = max_event_age
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
        self.watch = Watch(fault, self.clock)
        # The function's session: watched at its boundaries (a deployed stack's world may aim it
        # at an emulator's endpoint).
        self.session = world.function_session() if hasattr(world, "function_session") else watched_session()
        self.provider = WatchedProvider(world.provider(self.clock))

    # -- what S3 does ------------------------------------------------------------------
    def send(self, event: dict[str, Any], *, at: float | None = None) -> int:
        """Queue an async invocation (S3 delivering an event). Returns the delivery number."""
        self._deliveries += 1
        due = self.clock.now() if at is None else self.clock.start + at
        heapq.heappush(self._queue, _Pending(due, next(self._seq), copy.deepcopy(event),
                                             self._deliveries, 1, self._new_id(), due))
        return self._deliveries

    def send_now(self, event: dict[str, Any]) -> int:
        """Deliver a copy of the event and run it at once, even while another invocation
        is in the middle of its work: a concurrent duplicate."""
        self._deliveries += 1
        pending = _Pending(self.clock.now(), next(self._seq), copy.deepcopy(event),
                           self._deliveries, 1, self._new_id(), self.clock.now())
        self._invoke(pending)
        return pending.delivery

    def during(self, step: str | Boundary, action: Callable[[], Any], *, delivery: int = 1,
               attempt: int = 1) -> None:
        """Run `action` once, when that invocation reaches `step` (a Step name or a Boundary)."""
        at = step if isinstance(step, Boundary) else STEP_BOUNDARIES[choice(Step, step)]
        self.watch.at(at, action, delivery=delivery, attempt=attempt)

    # -- what the Lambda service does -------------------------------------------------
    def run(self) -> list[Attempt]:
        """Process the queue until it is empty, moving the clock to each due time."""
        while self._queue:
            pending = heapq.heappop(self._queue)
            self.clock.advance_to(pending.due)
            if self.clock.now() - pending.enqueued > self.max_event_age:
                self._to_destination(pending, "EventAgeExceeded", None)
                continue
            self._invoke(pending)
        return self.attempts

    def _invoke(self, pending: _Pending) -> Attempt:
        container, cold = self._acquire()
        deadline = self.clock.now() + self.timeout
        attempt = Attempt(pending.delivery, pending.attempt, pending.request_id,
                          container.name, cold, round(self.clock.t, 3))
        self.attempts.append(attempt)
        self._running.append(attempt)
        context = LambdaContext(pending.request_id, self.function_name, deadline, self.clock)
        visit = Visit(pending.delivery, pending.attempt, work_of(pending.event))
        try:
            with self.watch.visiting(visit), self._environment(), self._output(attempt):
                function = getattr(container.module, self.function)
                attempt.result = function(copy.deepcopy(pending.event), context)
                self.watch.arrive(visit, END)  # a fault here: an error after the last write
            attempt.outcome = "ok"
        except Crash as crash:
            attempt.outcome, attempt.error = "crash", f"Runtime.ExitError: {crash}"
            container.module = None  # the process is gone: this container is never reused
        except Exception as error:  # the function's error, as Lambda reports it
            attempt.outcome, attempt.error = "error", f"{type(error).__name__}: {error}"
        finally:
            self._running.pop()
            attempt.steps, attempt.crossings = visit.steps, visit.crossings
            attempt.calls = dict(visit.calls)
            container.busy = False
        if attempt.outcome == "ok" and self.clock.now() > deadline:
            attempt.outcome = "timeout"
            attempt.error = f"Sandbox.Timedout: Task timed out after {self.timeout:.2f} seconds"
        attempt.end = round(self.clock.t, 3)
        if attempt.failed:
            self.after_failure(pending, attempt)
        return attempt

    def after_failure(self, pending: _Pending, attempt: Attempt) -> None:
        if pending.attempt <= self.retries:
            delay = RETRY_DELAYS[pending.attempt - 1]
            heapq.heappush(self._queue, _Pending(
                self.clock.now() + delay, next(self._seq), pending.event, pending.delivery,
                pending.attempt + 1, pending.request_id, pending.enqueued))
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
        with self._environment():
            container = Container(f"c{self._containers_started}", self.entry)
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
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                yield
        finally:
            attempt.logs.extend(printed.getvalue().splitlines())

    def _environment(self) -> Any:
        return contextlib.nullcontext() if self.wired else as_lambda(self.env, self.clock, self.session)

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
        self.world.sqs.send_message(QueueUrl=self.world.queue_url, MessageBody=json.dumps(record))
