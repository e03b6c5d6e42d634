"""Boundaries: the calls where a handler meets the world, and where the runtime makes it fail.

A handler is plain code over boto3 clients and a payment provider client. It has no test
hooks. The real world fails at its calls: a request that never left, a request that did
its work but whose answer was lost, a process that died. So the local runtime injects
faults there, and only there:

- every AWS call made through a client of `watched_session()` passes botocore's
  `before-call` and `after-call` events (the hooks live on the session, not in the handler);
- every provider call passes through `WatchedProvider`, a wrapper around the provider
  client the function was built with.

A boundary is named by the call, which of its kind it is within one invocation, and the
side: `before provider:charge`, `after dynamodb:UpdateItem #2`. One more boundary, `end`,
is crossed when the handler returns: a fault there is an error after the last write.

The runtime keeps one `Watch` per run. It counts arrivals at each boundary per piece of
work (which arrival fails is the fault plan's `times`), starts a concurrent copy of an
event when a chosen invocation reaches a chosen boundary, and records every crossing so a
person can read the timeline afterwards. Outside an invocation the hooks do nothing.

The boundaries' names and the fault plan are `idem.sim.faults`'; the sessions and threads that
carry the hooks (`watched_session`, `every_session_watched`, `inherit_invocations`) `idem.sim.sessions`'.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from botocore.exceptions import ClientError

from ..core.provider import ProviderOutcome
from ..core.errors import ProviderUnavailable
from .faults import (_STEP_NAMES, CHARGE_CALL, END_CALL, FIND_CALL, PROVIDER_CALLS, STRIPE_READS, Boundary, Crash,
                     FaultPlan, How, InjectedFault, Side)
from .platform.call_roles import role_of
from .platform.batch_partial import NOTHING_LANDED
from .sdk_retries import aws_error, cancelled_transaction, is_lost_answer, resent_by_sdk, role_at


@dataclass(frozen=True)
class Crossing:
    """One boundary an invocation crossed, at `t` seconds on the runtime's clock."""

    t: float
    boundary: Boundary
    failed: str = ""  # the fault injected here, if any
    note: str = ""  # what the platform did here besides (a read answered as the table was a second before)


@dataclass
class Visit:
    """One invocation while it runs: which work it does and what it has crossed."""

    delivery: int
    attempt: int
    work: str  # the event's identity: every copy and retry of one event shares it
    seen: Counter = field(default_factory=Counter)  # calls by name, so far
    calls: Counter = field(default_factory=Counter)  # AWS calls by operation
    crossings: list[Crossing] = field(default_factory=list)
    steps: list[tuple[float, str]] = field(default_factory=list)
    pending: list[Boundary] = field(default_factory=list)  # calls sent, answers not yet back
    outcome: str = ""  # the provider's answer to the call about to be made, if the plan chose one
    #: set by the runtime: the process dies here (never returns; see runtime._Run); without it a
    #: crash raises Crash, which only an invocation run outside the runtime should see
    kill: Callable[[str], Any] | None = None
    dead: str = ""  # why its process died, once it has
    deadline: float = 0.0  # when Lambda stops it, on the runtime's clock (0: no deadline known)
    began: float = 0.0  # when it started, on the runtime's clock (0: not known)
    thread: threading.Thread | None = None  # the thread it runs in, once the runtime has started it
    #: the seconds each of its threads moved the clock by (`idem.sim.runtime.thread_waits.own_time`)
    moved: dict[int, float] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)  # the threads it started
    pool_work: int = 0  # the pool work it submitted that has not yet ended
    #: its threads that are busy (`busy`, `take_off`), by thread id: what they do lands before it is judged
    busy: Counter = field(default_factory=Counter)
    #: what each AWS call it made asked, at its boundaries before and after (idem.sim.platform.call_roles)
    roles: dict[Boundary, str] = field(default_factory=dict)
    #: the last call's read was answered as its table was a second before (idem.sim.platform.eventual_reads)
    stale_read: str = ""


@dataclass
class Trigger:
    at: Boundary
    delivery: int
    attempt: int
    action: Callable[[], Any]
    fired: bool = False


class Watch:
    """One run's boundaries: the fault plan, the triggers, and every arrival counted."""

    def __init__(self, plan: FaultPlan | None = None, clock: Any = None,
                 effects: tuple[str, ...] = (), aws_errors: bool = False) -> None:
        self.plan = plan or FaultPlan()
        #: an exception at an AWS call is what botocore raises there (`aws_error`), not InjectedFault
        self.aws_errors = aws_errors
        self.clock = clock
        self.effects = set(effects)  # AWS calls that count as effects, e.g. "sqs:SendMessage"
        self.arrivals: Counter[tuple[Boundary, str]] = Counter()
        #: the most arrivals any piece of work made at each boundary: which of a fault plan's
        #: arrivals this run ever asked about (idem.explore.check runs a schedule once per answer)
        self.reached: Counter[Boundary] = Counter()
        #: the arrivals at each boundary per role a request had there (idem.sim.platform.call_roles) and piece of
        #: work: a second plan pinned to a role fails that role's own first arrival; its keys are the roles reached
        self.role_arrivals: Counter[tuple[Boundary, str, str]] = Counter()
        self.effect_counts: Counter[tuple[str, str]] = Counter()  # (call, work) -> done
        self.triggers: list[Trigger] = []
        self.queues: set[str] = set()  # the SQS queues the handler sent messages to
        #: the FIFO SNS topics the handler published to, each with the check's own FIFO queue
        #: subscribed to it before the first publish went out (`_fifo_topic`)
        self.topics: dict[str, str] = {}
        #: the runtime's provider client (a WatchedProvider), where a charge the handler sends
        #: with Stripe's SDK itself is counted for its invocation (idem.explore.stripe_sdk)
        self.provider: Any = None
        #: the handler's DynamoDB requests DynamoDB refused as invalid (ValidationException: no retry
        #: and no item's state makes them succeed), each as (call, its parameters, the message)
        self.invalid: list[tuple[str, dict[str, Any], str]] = []
        #: its DynamoDB writes whose condition failed (ConditionalCheckFailedException), likewise: on a
        #: clean run, with nothing else writing, a ledger line refused so is never booked
        self.conditions_failed: list[tuple[str, dict[str, Any], str]] = []
        #: the charge requests the provider refused as invalid (400: nothing executed, nothing saved for the
        #: key), each in the error's own words: on a clean run, an order no retry will charge
        self.refused: list[str] = []
        #: under an SQS mapping, the references of the charges the provider declined (402): the
        #: runtime's DeclineWatch notes them, and so does a charge sent with Stripe's SDK itself
        self.declines: list[str] | None = None
        #: told of each object the handler created in S3, as (visit, API, bucket, key, answer): set by
        #: whoever runs the function, where its trigger may send it that object's event (`own_writes`)
        self.own_write: Callable[[Visit, str, str, str, dict[str, Any]], Any] | None = None

    def at(self, boundary: Boundary, action: Callable[[], Any], *, delivery: int = 1,
           attempt: int = 1) -> None:
        """Run `action` once, when invocation (delivery, attempt) reaches `boundary`."""
        self.triggers.append(Trigger(boundary, delivery, attempt, action))

    @contextlib.contextmanager
    def visiting(self, visit: Visit) -> Iterator[Visit]:
        """Make `visit` the invocation that the running code's calls belong to (`current`)."""
        token = _CURRENT.set(_CURRENT.get() + ((self, visit),))
        try:
            yield visit
        finally:
            _CURRENT.reset(token)

    # -- crossing a boundary ---------------------------------------------------------
    def before(self, visit: Visit, call: str, role: str = "") -> None:
        """`role`: what the request asks (idem.sim.platform.call_roles), for its boundaries before and after."""
        visit.seen[call] += 1
        boundary = Boundary(call, visit.seen[call], Side.BEFORE)
        visit.pending.append(Boundary(call, visit.seen[call], Side.AFTER))
        if role:
            visit.roles[boundary] = visit.roles[visit.pending[-1]] = role
        self.arrive(visit, boundary)
        take_off(visit)  # the call goes out now, unless its process died meanwhile

    def before_read(self, visit: Visit, call: str) -> None:
        """Cross the boundary before a read (the provider's look-up, a GET at Stripe), where the plan may fail
        it. A read changes nothing, so no boundary follows it."""
        visit.seen[call] += 1
        self.arrive(visit, Boundary(call, visit.seen[call], Side.BEFORE))

    def after(self, visit: Visit, call: str, succeeded: bool = True, step: str | None = None,
              counted: bool = True) -> None:
        """`counted` False: the call is an effect counted where it lands, not here (a FIFO publish)."""
        land()
        boundary = visit.pending.pop() if visit.pending else Boundary(call, visit.seen[call], Side.AFTER)
        if succeeded and counted and call in self.effects:
            self.effect_counts[(call, visit.work)] += 1
        self.arrive(visit, boundary, step)

    def abandon(self, visit: Visit) -> None:
        """The call raised before its answer came back (the fault before it, or its own error)."""
        land()
        if visit.pending:
            visit.pending.pop()

    def arrive(self, visit: Visit, boundary: Boundary, name: str | None = None) -> None:
        """Record the crossing, start any copy waiting for it, then fail if the plan says so."""
        stop_if_dead(visit)  # the process is gone: its other threads stop here too
        now = round(self._t(), 3)
        step = name or _STEP_NAMES.get(boundary)
        if step:
            visit.steps.append((now, step))
        crossing = Crossing(now, boundary, note=getattr(visit, "stale_read", "") if boundary.side is Side.AFTER else "")
        if crossing.note:
            visit.stale_read = ""
        visit.crossings.append(crossing)
        for trigger in self.triggers:
            if not trigger.fired and (trigger.at, trigger.delivery, trigger.attempt) == (
                    boundary, visit.delivery, visit.attempt):
                trigger.fired = True
                with busy(visit):  # a copy, a slow call's flight: it ends before this invocation is judged
                    trigger.action()
                stop_if_dead(visit)  # its process died meanwhile (another of its threads crashed)
        self.arrivals[(boundary, visit.work)] += 1
        arrival = self.arrivals[(boundary, visit.work)]
        self.reached[boundary] = max(self.reached[boundary], arrival)
        role = role_at(visit, boundary)
        self.role_arrivals[(boundary, role, visit.work)] += 1
        plan = self.plan.at_boundary(boundary, role)  # or the schedule's second fault (families.second_fault)
        if plan.role is not None:  # a second plan pinned to a role: that role's own arrivals
            arrival = self.role_arrivals[(boundary, role, visit.work)]
        if not plan.strikes(boundary, role) or not plan.fails_on(arrival) or resent_by_sdk(self, boundary, visit):
            return  # a lost answer after an AWS call: botocore resent it (sdk_retries), its answer is the handler's
        if plan.outcome:  # the provider's side: it answers the call that is about to go out
            visit.crossings[visit.crossings.index(crossing)] = Crossing(now, boundary, plan.outcome, crossing.note)
            visit.outcome = plan.outcome
            return
        visit.crossings[visit.crossings.index(crossing)] = Crossing(now, boundary, str(plan.how), crossing.note)
        if plan.how is How.CRASH:
            message = f"the process died {boundary} (arrival {arrival})"
            visit.dead = message
            if visit.kill is not None:
                visit.kill(message)  # never returns: no except, finally or atexit of the handler runs
            raise Crash(message)
        # an AWS call fails as botocore raises; a read of Stripe's as its SDK does (stripe_sdk.read_at_boundary),
        # a call to the provider as the provider does (WatchedProvider)
        if self.aws_errors and boundary.call != END_CALL \
                and not boundary.call.startswith((PROVIDER_CALLS, STRIPE_READS)):
            raise aws_error(boundary, arrival)
        if boundary.side is Side.AFTER and boundary.call != END_CALL:
            raise InjectedFault(f"the answer to {boundary.call} was lost (arrival {arrival}): "
                                "the call did its work, the function never heard")
        raise InjectedFault(f"injected failure {boundary} (arrival {arrival})")

    def _t(self) -> float:
        if self.clock is None:
            return 0.0
        return self.clock.now() - getattr(self.clock, "start", 0.0)


# -- a thread of an invocation: busy, then stopped with its process --------------------------
# On Lambda a process that dies ends all its threads at once, and the execution environment is frozen
# when its invocation is done ("Lambda freezes the execution environment when the runtime and each
# extension have completed and there are no pending events":
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). Here a thread of a dead
# invocation stops at its next boundary; what it has under way (a call out, a copy the runtime runs at its
# boundary) is `busy`, and whoever judges the invocation waits until none is (`settle`), so nothing it sent
# lands later, in another schedule. The same lock guards the look at `dead` and the count, so a thread
# either saw its process dead and stopped, or is counted busy before the judge looks.
_BUSY = threading.Condition()


def stop_if_dead(visit: Visit) -> None:
    """The calling thread of `visit` stops here for good if its process died (`Visit.kill` never returns).
    (A stand-in for a visit, with neither, never stops.)"""
    dead, kill = getattr(visit, "dead", ""), getattr(visit, "kill", None)
    if dead and kill is not None:
        kill(dead)


def _enter(visit: Visit, me: int) -> None:
    """Count the calling thread busy for `visit`, or stop it there if its process died."""
    with _BUSY:
        dead = bool(visit.dead) and visit.kill is not None
        if not dead:
            visit.busy[me] += 1
    if dead:
        stop_if_dead(visit)


def _leave(visit: Visit, me: int, every: bool = False) -> None:
    """The calling thread is busy once less for `visit` (`every`: not at all)."""
    with _BUSY:
        if every or visit.busy[me] <= 1:
            visit.busy.pop(me, None)
        else:
            visit.busy[me] -= 1
        _BUSY.notify_all()


@contextlib.contextmanager
def busy(visit: Visit) -> Iterator[None]:
    """While it lasts the calling thread is busy for `visit` (the runtime acts at its boundary: a copy, a
    slow call's flight, a sleep running what falls due); a thread whose process died stops here instead."""
    me = threading.get_ident()
    _enter(visit, me)
    try:
        yield
    finally:
        _leave(visit, me)


def take_off(visit: Visit) -> None:
    """The calling thread's call goes out: it is busy for `visit` until the call lands (`land`), or
    stops here if its process died since it crossed the boundary before the call."""
    land()  # a call of its own that never said it landed
    _enter(visit, threading.get_ident())
    threading.current_thread()._idem_flight = visit  # type: ignore[attr-defined]


def land() -> None:
    """The calling thread's call (`take_off`) is back, or it never will be (its work ended, it stopped)."""
    visit = threading.current_thread().__dict__.pop("_idem_flight", None)
    if visit is not None:
        _leave(visit, threading.get_ident())


def stopped(visit: Visit) -> None:
    """The calling thread stops for good (`Visit.kill`): it is busy for `visit` no more."""
    land()
    _leave(visit, threading.get_ident(), every=True)


def settle(visit: Visit, poll: float = 0.05) -> None:
    """Wait until no thread of `visit` but the caller is busy: what its threads sent has landed, and
    each is stopped, ended, or will stop at its next boundary once `visit.dead` is set."""
    me = threading.get_ident()
    with _BUSY:
        while any(thread != me for thread in visit.busy):
            _BUSY.wait(poll)  # a timeout: the schedule's real-time bound (SIGALRM) can still ring


# -- where a call goes: the invocation that made it --------------------------------------
#: The invocations the running code belongs to (innermost last), as a context variable, not a
#: thread's own: an asyncio task copies its creator's context, and `inherit_invocations` hands
#: it to every thread the handler starts and every task it submits to a thread pool (its own
#: ThreadPoolExecutor, boto3's transfer manager), so their calls are the invocation's boundaries.
_CURRENT: contextvars.ContextVar[tuple[tuple["Watch", Visit], ...]] = contextvars.ContextVar("idem_invocation",
                                                                                            default=())


def _stack() -> list[tuple[Watch, Visit]]:
    return list(_CURRENT.get())


def current() -> tuple[Watch, Visit] | None:
    """The watch and invocation the running code belongs to, if any."""
    stack = _CURRENT.get()
    return stack[-1] if stack else None


@contextlib.contextmanager
def unwatched() -> Iterator[None]:
    """Calls the check makes while an invocation runs (a queue of its own, a read for a partial answer):
    not the handler's, so no boundary of its invocation."""
    token = _CURRENT.set(())
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _call_name(model: Any) -> str:
    return f"{model.service_model.endpoint_prefix}:{model.name}"


#: set in a call's botocore context when `_before_call` answered it (a cancelled transaction): no after-call of it
_ANSWERED = "idem_answered_before"


def _before_call(model: Any, params: Any = None, context: Any = None, **_: Any) -> Any:
    running = current()
    if running:
        watch, visit = running
        name = _call_name(model)
        visit.calls[name] += 1
        try:
            watch.before(visit, name, context.get(_ROLE, "") if isinstance(context, dict) else "")
        except ClientError as throttled:  # a throttle: a transaction is cancelled instead (botocore raises it)
            answer = cancelled_transaction(name, throttled, params)
            if answer is None or not isinstance(context, dict):
                raise
            context[_ANSWERED] = True
            return answer
    return None


#: set in a call's botocore context: a publish to a FIFO topic, counted where its queue delivers it
_FIFO_PUBLISH = "idem_fifo_publish"
_fifo_lock = threading.Lock()


def _fifo_topic(watch: Watch, topic_arn: str) -> bool:
    """Subscribe the check's own FIFO queue to a FIFO topic (once per run, before its first publish
    goes out), so the check counts what the topic delivers: a FIFO topic delivers a message once
    per MessageDeduplicationId (or body, with ContentBasedDeduplication) within its 5-minute
    deduplication interval; a repeat is "accepted successfully but [isn't] delivered"
    (https://docs.aws.amazon.com/sns/latest/api/API_PublishBatchRequestEntry.html, and Publish's
    https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/sns/aws.sdk.kotlin.services.sns.model/-publish-request/message-deduplication-id.html).
    moto's topic passes the id on to the queue, which drops the repeat. The queue dedups by body
    too (ContentBasedDeduplication) for a content-based topic: with RawMessageDelivery its body is
    the message. False: no such topic (the handler's call fails on its own, counted as a call)."""
    from .world import empty_queue, fake_client  # the world's module needs no boundary: no cycle

    with _fifo_lock:
        if topic_arn in watch.topics:
            return True
        try:
            with unwatched():  # the check's own calls: not the handler's
                name = f"idem-topic-{hashlib.sha256(topic_arn.encode()).hexdigest()[:24]}.fifo"
                url = fake_client("sqs").create_queue(QueueName=name, Attributes={
                    "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
                arn = fake_client("sqs").get_queue_attributes(
                    QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                fake_client("sns").subscribe(
                    TopicArn=topic_arn, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
        except ClientError:
            return False
        empty_queue(url)  # an earlier run's messages (the queue outlives its run) are not this run's
        watch.topics[topic_arn] = url
        return True


def _parameters(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
    """botocore's `before-parameter-build`: the call's own parameters (where a message goes)."""
    running = current()
    if not running or not isinstance(params, dict):
        return
    if isinstance(context, dict):
        context[_ROLE] = role_of(_call_name(model), params)
    if model.service_model.endpoint_prefix == "dynamodb" and isinstance(context, dict):
        context[_PARAMETERS] = params  # read again if DynamoDB refuses the request (`_after_call`)
    if params.get("QueueUrl") and model.name.startswith("SendMessage"):
        running[0].queues.add(params["QueueUrl"])
    topic = params.get("TopicArn") or params.get("TargetArn")
    if (_call_name(model) in ("sns:Publish", "sns:PublishBatch") and isinstance(topic, str)
            and topic.endswith(".fifo") and _fifo_topic(running[0], topic) and isinstance(context, dict)):
        context[_FIFO_PUBLISH] = True


#: set in a DynamoDB call's botocore context: the call's own parameters
_PARAMETERS = "idem_parameters"
#: set in every call's botocore context: what it asks (idem.sim.platform.call_roles)
_ROLE = "idem_role"


def _after_call(model: Any, http_response: Any = None, context: Any = None, parsed: Any = None, **_: Any) -> None:
    running = current()
    if running and not (isinstance(context, dict) and context.get(_ANSWERED)):  # as if it had raised before
        watch, visit = running
        status = getattr(http_response, "status_code", 200)
        error = parsed.get("Error", {}) if isinstance(parsed, dict) else {}
        if status >= 400 and isinstance(error, dict) and isinstance(context, dict) \
                and isinstance(context.get(_PARAMETERS), dict):
            kept = {"ValidationException": watch.invalid,
                    "ConditionalCheckFailedException": watch.conditions_failed}.get(str(error.get("Code")))
            if kept is not None:
                kept.append((_call_name(model), context[_PARAMETERS], str(error.get("Message", ""))))
        # not counted: a FIFO publish (counted where it lands), or a batch call answered with every entry
        # failed (idem.sim.platform.batch_partial.NOTHING_LANDED: nothing landed)
        watch.after(visit, _call_name(model), succeeded=status < 300, counted=not (isinstance(context, dict) and (
            context.get(_FIFO_PUBLISH) or context.get(NOTHING_LANDED))))


def _call_failed(exception: Any = None, **_: Any) -> None:
    """botocore's `after-call-error` (it names no model): the request never got an answer (a
    connection error; every attempt's answer lost: the boundary after it is crossed, the call
    having done its work)."""
    running = current()
    if running and running[1].pending and is_lost_answer(exception):
        running[0].after(running[1], running[1].pending[-1].call, succeeded=False)
    elif running:
        running[0].abandon(running[1])


def watch_events(events: Any) -> None:
    """Put the boundary hooks on a botocore event system; once per session (unique ids)."""
    events.register("before-parameter-build", _parameters, unique_id="idem-parameters")
    events.register("before-call", _before_call, unique_id="idem-before-call")
    events.register("after-call", _after_call, unique_id="idem-after-call")
    events.register("after-call-error", _call_failed, unique_id="idem-after-call-error")
    from .sqs_deletes import watch_deletes  # a function deleting its own messages (SqsFedLambda's queue)
    from .platform.sqs_visibility import watch_visibility  # or changing their visibility timeout
    from .platform.batch_partial import watch_partial  # a batch call answered in part
    from .writes import watch_writes  # where a write lands (idem.explore.state reads it back)
    from .own_writes import watch_own_writes  # an object it creates, which S3 may tell it of

    watch_writes(events, current)
    watch_own_writes(events, current)
    watch_deletes(events, current)
    watch_visibility(events, current)
    watch_partial(events, current, unwatched)


def executed(error: BaseException) -> bool:
    """Did the provider execute the request it answered with `error`? Only a first (not
    replayed) 500: Stripe saves the answer once execution has begun, money moved or not
    (https://docs.stripe.com/api/idempotent_requests); the stand-in moves the money."""
    return getattr(error, "http_status", None) == 500 and not getattr(error, "replayed", True)


class WatchedProvider:
    """The provider client a function was built with, with `charge` and its look-up (`find_charges`)
    as boundaries."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.made = 0  # charges the provider executed through this client (replays are not)
        #: executed charges by the work (event) whose invocation asked for them
        self.made_for: Counter[str] = Counter()
        self.sending: str | None = None  # the idempotency key of the charge being sent
        #: keys whose request is in flight at the provider (a slow call): a request with one of
        #: them gets 409 Conflict, as Stripe answers (https://docs.stripe.com/api/idempotent_requests)
        self.held: set[str] = set()

    def charge(self, *args: Any, **kwargs: Any) -> Any:
        running = current()
        if running is None:
            return self._made(self.inner.charge(*args, **kwargs), "")
        watch, visit = running
        outcome = self.before_charge(watch, visit, kwargs.get("idempotency_key"))
        if outcome:
            kwargs["outcome"] = outcome
        try:
            charge = self._made(self.inner.charge(*args, **kwargs), visit.work)
        except Exception as error:
            if executed(error):  # a saved 500: the charge went through, the answer is an error
                self.count(1, visit.work)
            if getattr(error, "http_status", None) == 400:
                watch.refused.append(str(error)[:300])
            watch.abandon(visit)
            raise
        watch.after(visit, CHARGE_CALL, step="replayed" if getattr(charge, "replayed", False) else None)
        return charge

    def before_charge(self, watch: Watch, visit: Visit, key: str | None) -> str:
        """Cross the boundary before a charge with idempotency key `key`; return how the provider
        answers it: the plan's provider outcome for this call, 409 when another request with the
        key is in flight, or "" (as it would). Stripe's SDK called directly crosses it too."""
        self.sending = key
        watch.before(visit, CHARGE_CALL)  # a slow call's flight (a copy runs meanwhile) happens here
        outcome, visit.outcome = visit.outcome, ""  # the plan's provider outcome, for this call only
        if not outcome and key in self.held:
            outcome = ProviderOutcome.CONFLICT.value  # another request with this key is in flight
        return outcome

    def _made(self, charge: Any, work: str) -> Any:
        if not getattr(charge, "replayed", False):
            self.count(1, work)
        return charge

    def count(self, executed: int, work: str) -> None:
        """`executed` charges the provider made for the invocation doing `work` (a charge the
        handler sent with Stripe's SDK itself is counted here too: idem.explore.stripe_sdk)."""
        self.made += executed
        self.made_for[work] += executed

    def find_charges(self, *args: Any, **kwargs: Any) -> Any:
        """The inner client's look-up, after the boundary before it (FIND_CALL). Where the fault plan
        fails it, the caller gets what the stand-in raises when it cannot serve a request
        (ProviderUnavailable, 503): nothing read. A read changes nothing, so no boundary follows it."""
        running = current()
        if running is not None:
            watch, visit = running
            try:
                watch.before_read(visit, FIND_CALL)
            except InjectedFault as fault:
                raise ProviderUnavailable(f"the provider could not serve find_charges ({fault})") from None
        return self.inner.find_charges(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def calls_made(action: Callable[[], Any]) -> tuple[Any, int]:
    """Run `action` as one invocation would; return its result and the AWS calls it made
    through clients of `watched_session()`."""
    visit = Visit(0, 0, "counted")
    with Watch().visiting(visit):
        result = action()
    return result, sum(visit.calls.values())


#: On AWS the demo stack's failure is a wrapper around the entry point; locally the runtime
#: injects the same failure at the same boundary, so it runs the entry point itself.
DEMO_WRAPPER = "idem.demo_failure"


def local_entry(handler_setting: str) -> str:
    """The module the local runtime loads for a deployed function's Handler setting."""
    module = handler_setting.rsplit(".", 1)[0]
    return "idem.core.entry" if module == DEMO_WRAPPER else module
