"""A local Lambda for asynchronous invocations, on a virtual clock.

What it reproduces from the Lambda service, and nothing more:
- an async queue: S3 hands the event over and gets no answer back;
- on a function error, up to `retries` (MaximumRetryAttempts, 0-2) more attempts, 60 s and then
  120 s after the failure by default, or as `retry_delay` says (idem.sim.runtime.delays), same event and id;
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
import decimal
import hashlib
import heapq
import itertools
import json
import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ...core.clock import iso8601
from ..boundary import busy, current, settle, Crossing, Visit, Watch, WatchedProvider
from ..faults import CHARGE_CALL, END, STEP_BOUNDARIES, Boundary, Crash, FaultPlan, Side, Step, choice
from ..sessions import watched_session
from ..sdk_retries import install as install_sdk_retries
from ..platform.eventual_reads import install as install_eventual_reads
from ..world import ACCOUNT, REGION, LocalWorld
from .cold_start import Container, HandlerExited, HandlerNotLoaded, handler_traceback
from .delays import RetryDelay, documented_retry_delay
from .throttles import throttled
from .thread_waits import own_time
from .handler_guard import callable_problem, import_hint
from .invocation_thread import ScheduleTimedOut, _Run
from .logtail import LogTail
from .on_lambda import _still, as_lambda, move_clocks, on_clock

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
    messages: list[str] = field(default_factory=list)  # fed by SQS: the message ids of its batch

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
    throttles: int = field(default=0, compare=False)  # how often it was throttled (reserved concurrency)


def work_of(event: dict[str, Any]) -> str:
    """The identity of the work an event asks for: every copy and retry of it shares it."""
    return hashlib.sha256(json.dumps(event, sort_keys=True).encode()).hexdigest()[:16]


def log_stream_name(container: str) -> str:
    """The context's log_stream_name: one log stream per execution environment
    ("the log stream for the function instance": https://docs.aws.amazon.com/lambda/latest/dg/python-context.html),
    `DATE/[$LATEST]` and 32 hex digits, so a handler that takes it for the instance's id sees two
    environments as two."""
    return f"2026/01/01/[$LATEST]{hashlib.sha256(container.encode()).hexdigest()[:32]}"


def per_environment(env: dict[str, str], container: str) -> dict[str, str]:
    """The variables as one execution environment sees them: `AWS_LAMBDA_LOG_STREAM_NAME` is its own log
    stream, as the context's log_stream_name is ("The name of the Amazon CloudWatch Logs group and stream
    for the function": https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
    unless `--env` set it to a value of its own."""
    if not container or env.get("AWS_LAMBDA_LOG_STREAM_NAME") != "2026/01/01/[$LATEST]local":
        return env
    return {**env, "AWS_LAMBDA_LOG_STREAM_NAME": log_stream_name(container)}


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
        reserved_concurrency: int | None = None,  # ReservedConcurrentExecutions (None: not reserved)
        failure_destination: bool = True,  # a DLQ or OnFailure destination (False: a failed event is discarded)
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
        self.reserved_concurrency = reserved_concurrency
        #: whether the function has a failure destination (DLQ or OnFailure): without one Lambda
        #: discards a failed or expired event (invocation-async-error-handling.html)
        self.failure_destination = failure_destination
        self.retry_delay: RetryDelay = documented_retry_delay  # idem.sim.runtime.delays
        self.reuse_containers = reuse_containers
        self.function_name = function_name
        self.entry, self.function = (handler.rsplit(":", 1) if handler else (entry, "lambda_handler"))
        self.wired = handler is None  # the runtime builds the entry's App with its clock and ids
        self.provider_factory = provider_factory
        self.provider_built = False  # whether the handler built its payment client with it (`_built_provider`)
        self.attempts: list[Attempt] = []
        self.containers: list[Container] = []
        self._containers_started = 0
        self._queue: list[_Pending] = []
        self._seq = itertools.count()
        self._deliveries = 0
        # Request ids and owner tokens: the same every run, different for each runtime of a world.
        world.runtimes_started += 1
        self._random = random.Random(f"{world.prefix}/{world.runtimes_started if seed is None else seed}")
        #: each execution environment's time.monotonic: its own reference point (`_monotonic_offset`)
        self._uptimes = f"{world.prefix}/{world.runtimes_started if seed is None else seed}/uptime"
        self._monotonic: dict[str, float] = {}
        self._running: list[Attempt] = []
        self.visits: list[Visit] = []  # every invocation it started (`end`)
        # a handler the check runs (not the workbook's wired entry) meets botocore's own errors
        self.watch = Watch(fault, self.clock, aws_errors=handler is not None)
        if handler is not None:  # a lost answer after an AWS call is resent by botocore (sdk_retries)
            install_sdk_retries(current, Crossing)
            install_eventual_reads(current, own_time)  # a read without ConsistentRead may miss a write
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
        heapq.heappush(self._queue, _Pending(due, next(self._seq), as_delivered(event),
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
        pending = _Pending(self.clock.now(), next(self._seq), as_delivered(event),
                           self._deliveries, 1, self._new_id(), self.clock.now())
        if not throttled(self, pending):
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
        elif not throttled(self, pending):
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
        context.log_stream_name = log_stream_name(container.name)
        visit = Visit(pending.delivery, pending.attempt, self.work_of(pending.event), deadline=deadline,
                      began=self.clock.now())
        self.visits.append(visit)
        run = _Run(visit)
        event = as_delivered(pending.event)

        def body() -> None:
            with self.watch.visiting(visit):
                function = getattr(container.module, self.function)
                result = function(event, context)
                self.watch.arrive(visit, END)  # a fault here: an error after the last write
            attempt.result = result

        try:
            with self._environment(container.name), self._output(attempt), container.running():
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
            elif run.raised is not None and not isinstance(run.raised, (ScheduleTimedOut, Crash)):
                container.module = None  # the handler's own BaseException: the runtime's process ends
                raise HandlerExited(ended_by(run.raised, f"on delivery {pending.delivery}, attempt "
                                                         f"{pending.attempt}")) from None
            elif run.raised is not None:  # the check's own: its bound on a schedule
                raise run.raised
            elif problem := marshal_error(attempt.result):
                attempt.outcome, attempt.error = "error", f"Runtime.MarshalError: Unable to marshal response: {problem}"
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

    def end(self) -> None:
        """The schedule is over: no thread of its invocations may act any more. On Lambda a function's
        threads run only while an invocation of their execution environment runs ("Lambda freezes the
        execution environment when the runtime and each extension have completed and there are no pending
        events": https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), and the
        check's next schedule is another world's. So every invocation's threads left running stop at their
        next boundary, and what they have under way lands first (`boundary.settle`), before it is judged."""
        for visit in self.visits:
            visit.dead = visit.dead or "the schedule ended: its execution environments are frozen"
        for visit in self.visits:
            settle(visit)

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
            with self._environment(f"c{self._containers_started}"):
                container = Container(f"c{self._containers_started}", self.entry)
        except SystemExit as exiting:
            raise HandlerExited(f"the handler's module called sys.exit({exiting.code!r}) at import") from None
        except Exception as error:
            own = handler_traceback(error)
            raise HandlerNotLoaded(f"{self.entry} fails at import: {type(error).__name__}: {error}"
                                   f"{import_hint(error, own, self.env)}", own) from None
        except (ScheduleTimedOut, Crash):
            raise
        except BaseException as error:  # noqa: B036 - the handler's own (KeyboardInterrupt, ...): it ends the runtime
            raise HandlerExited(ended_by(error, "at import")) from None
        if not self.wired and (problem := callable_problem(container.module, self.function)):
            raise HandlerNotLoaded(problem, "")  # Lambda calls it with (event, context): it cannot be
        if self.wired:
            container.module._app = container.module.App.from_environment(
                self.env, session=self.session, clock=self.clock, provider=self.provider,
                new_token=self._new_id, log=self._log)
        else:
            self._replace_factory(container.module)
        container.busy = True
        container.invocations = 1
        self.containers.append(container)
        return container, True

    def _replace_factory(self, module: Any) -> None:
        """The handler's provider factory, replaced with the provider stand-in where the handler finds
        it: in its module, and in the module its function is written in (`from impl import
        lambda_handler`, re-exported). A factory named with --provider-factory (not the default
        make_provider) that is in neither is bad input: the check would run the handler's own."""
        homes = [vars(module), getattr(getattr(module, self.function, None), "__globals__", None)]
        found = [home for home in homes if isinstance(home, dict) and self.provider_factory in home]
        for home in found:
            home[self.provider_factory] = self._built_provider
        if not found and self.provider_factory != "make_provider":
            where = os.path.basename(getattr(module, "__file__", None) or self.entry)
            raise HandlerNotLoaded(f"--provider-factory {self.provider_factory}: {where} has no "
                                   f"{self.provider_factory} (nor has the module its {self.function} is written "
                                   "in): name the function the handler builds its payment client with, or leave "
                                   "--provider-factory out for make_provider", "")

    def _built_provider(self, *_: Any, **__: Any) -> Any:
        """The provider stand-in, noting that the handler built its payment client with it."""
        self.provider_built = True
        return self.provider

    @contextlib.contextmanager
    def _output(self, attempt: Attempt) -> Iterator[None]:
        """A handler the runtime does not wire prints its logs: they become the attempt's."""
        if self.wired:
            yield
            return
        printed = LogTail()  # the last lines only, however much it prints (idem.sim.runtime.logtail)
        try:
            with contextlib.redirect_stdout(printed):
                yield
        finally:
            attempt.logs.extend(printed.lines())

    def _environment(self, container: str = "") -> Any:
        if self.wired:
            return contextlib.nullcontext()
        return as_lambda(per_environment(self.env, container), self.clock, self.session, sleep=self.sleep,
                         monotonic_offset=self._monotonic_offset(container) if container else None)

    def _monotonic_offset(self, container: str) -> float:
        """What `time.monotonic` adds to the virtual clock in `container`. Each execution environment
        is a process of its own (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html),
        whose monotonic clock has a reference point of its own: "only the difference between the results
        of two calls is valid" (https://docs.python.org/3/library/time.html#time.monotonic). It never goes
        back inside one environment; across two, either may be ahead: each reads, at its cold start, an
        uptime drawn from 0 to a day (seeded by runtime and environment), so a value kept in a table by one
        environment and compared in another is as meaningless as on Lambda."""
        if container not in self._monotonic:
            uptime = random.Random(f"{self._uptimes}/{container}").uniform(0.0, 86_400.0)
            self._monotonic[container] = uptime - self.clock.now()
        return self._monotonic[container]

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
            with busy(visit):  # what falls due runs before its invocation is judged (boundary.busy)
                self.advance(max(0.0, visit.deadline - self.clock.now()))
            if visit.kill is not None:
                visit.dead = "timed out"
                visit.kill("timed out", True)  # type: ignore[call-arg]
        with busy(visit):
            self.advance(seconds)

    def _log(self, line: str) -> None:
        if self._running:
            self._running[-1].logs.append(line)

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def _to_destination(self, pending: _Pending, condition: str, attempt: Attempt | None) -> None:
        """Send Lambda's invocation record to the on-failure destination (an SQS queue), if it has one."""
        if not self.failure_destination:
            return
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


def ended_by(error: BaseException, where: str) -> str:
    """What a handler did that raised a BaseException that is not an Exception (KeyboardInterrupt,
    GeneratorExit, its own), and what Lambda does then: its Python runtime catches only Exception,
    around the handler's call and around the import of its module (awslambdaric's bootstrap.py,
    handle_event_request and run:
    https://github.com/aws/aws-lambda-python-runtime-interface-client/blob/main/awslambdaric/bootstrap.py),
    so anything else ends the runtime's process, as sys.exit does."""
    name, said = type(error).__name__, " ".join(str(error).split())
    return (f"the handler raised {name}{f' ({said})' if said else ''} {where}: Lambda's Python runtime catches "
            f"only Exception, so {name}, a BaseException that is not one, ends its process as sys.exit does "
            "(Runtime.ExitError)")


def marshal_error(result: Any) -> str:
    """"" when Lambda's Python runtime can send the handler's result back; else the JSON encoder's
    message. The runtime returns bytes as they are and encodes anything else as JSON, a Decimal
    included; what it cannot encode fails the invocation with Runtime.MarshalError "Unable to marshal
    response: <the encoder's message>", an error retried as any other (awslambdaric's
    LambdaMarshaller.marshal_response and its Encoder:
    https://github.com/aws/aws-lambda-python-runtime-interface-client/blob/main/awslambdaric/lambda_runtime_marshaller.py)."""
    if result is None or isinstance(result, bytes):
        return ""
    try:
        json.dumps(result, default=_decimal)
    except Exception as error:  # noqa: BLE001 - whatever the encoder raises, the runtime reports
        return str(error)
    return ""


def _decimal(value: Any) -> Any:
    """What the runtime's encoder adds to JSON's kinds: a Decimal (written as its digits)."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def as_delivered(event: Any) -> Any:
    """The event as an invocation gets it: Lambda's runtime converts each event, "a JSON-formatted
    document", into the handler's dict (https://docs.aws.amazon.com/lambda/latest/dg/python-handler.html),
    so no part of it is shared with the caller or another invocation (a handler that changes its event
    changes its own). JSON's kinds are copied here directly (several times quicker than copy.deepcopy);
    anything else, as copy.deepcopy copies it."""
    kind = type(event)
    if kind is dict:
        return {key: as_delivered(value) for key, value in event.items()}
    if kind is list:
        return [as_delivered(value) for value in event]
    if kind is str or kind is int or kind is float or kind is bool or event is None:
        return event
    return copy.deepcopy(event)
