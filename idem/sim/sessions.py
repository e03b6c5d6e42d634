"""What a handler makes for itself, made to cross the boundaries too: its boto3 sessions (the watched
session the runtime hands it, and any other it builds) and its own threads and thread pools."""
from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import weakref
from typing import Any, Callable, Iterator, Mapping

import boto3

from .boundary import current, land, stop_if_dead, watch_events

REGION = "us-east-1"


#: Threads a handler started during an invocation (its pools' workers among them).
HANDLER_THREADS: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()


def release_handler_threads() -> None:
    """Leave the handlers' pool threads out of the joins at exit: a pool whose invocation was
    killed is never shut down, and concurrent.futures would wait for its workers forever."""
    import concurrent.futures.thread as pools

    for thread in list(HANDLER_THREADS):
        pools._threads_queues.pop(thread, None)  # type: ignore[attr-defined]


#: called with each thread an invocation starts, before it starts (idem.sim.runtime.on_lambda notes its times)
THREAD_STARTS: list[Callable[[threading.Thread], None]] = []


@contextlib.contextmanager
def inherit_invocations() -> Iterator[None]:
    """From now on, a thread started, or a callable submitted to a ThreadPoolExecutor, runs in a copy
    of the context of the code that started or submitted it: its calls belong to the same invocation
    (and a pool's thread, reused later by another invocation, takes that one's). A thread of an
    invocation whose process died stops there instead. Started or submitted outside every invocation,
    they run as they would anyway.

    Installed once, for the rest of the process: leaving the `with` takes nothing away. A dead
    invocation's thread may get the CPU back only after the check's batch is over (its own thread,
    descheduled between two submits while a worker crashed); were the patches gone by then, its work
    would run in a thread of no invocation, its calls (a charge) crossing no boundary, and land in a
    later schedule (docs/reliability.md, "a function's threads live and die with its invocations")."""
    _install_inheritance()
    yield


def _install_inheritance() -> None:
    """Patch threading.Thread.start and ThreadPoolExecutor.submit (see `inherit_invocations`), once."""
    import concurrent.futures
    import concurrent.futures.thread

    start, submit = threading.Thread.start, concurrent.futures.ThreadPoolExecutor.submit
    if getattr(start, "_idem_inherits", False):
        return

    def started(self: threading.Thread, *args: Any, **kwargs: Any) -> None:
        running = current()
        # a thread of a dead process starts nothing (boundary.busy); not the runtime's own thread, nor a
        # pool's worker (started under the pools' global lock: `submitted` stopped a dead one before it)
        if running is not None and not getattr(self, "_idem_runtime", False) \
                and getattr(self, "_target", None) is not concurrent.futures.thread._worker:
            stop_if_dead(running[1])
        if running is not None:
            HANDLER_THREADS.add(self)
            context, run = contextvars.copy_context(), self.run

            def run_in_context() -> None:
                try:
                    context.run(run)
                finally:
                    land()  # a call of its own that never said it landed (boundary.take_off)
            self.run = run_in_context  # type: ignore[method-assign]
            for note in THREAD_STARTS:
                note(self)
        start(self, *args, **kwargs)

    def submitted(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        running = current()
        if running is not None:
            stop_if_dead(running[1])  # nor submits work
            return submit(self, contextvars.copy_context().run, fn, *args, **kwargs)
        return submit(self, fn, *args, **kwargs)

    started._idem_inherits = True  # type: ignore[attr-defined]
    threading.Thread.start, concurrent.futures.ThreadPoolExecutor.submit = started, submitted  # type: ignore[method-assign]


@contextlib.contextmanager
def every_session_watched() -> Iterator[None]:
    """While it lasts, every boto3 session made anywhere (`boto3.session.Session()`, as
    Powertools builds its own) carries the boundary hooks, so its clients' calls are boundaries
    too. Sessions made before it (the default one is swapped for the watched one) need none."""
    original = boto3.session.Session.__init__
    if getattr(original, "_idem_watched", False):  # already inside (a concurrent copy)
        yield
        return

    shared = watched_session()._session.get_component("data_loader")

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        watch_events(self.events)
        # botocore's data files (endpoints, service models) read once per process, not once per
        # session: Powertools builds a session at every cold start, and parsing them again each
        # time was most of a Powertools handler's check (minutes)
        if kwargs.get("botocore_session") is None and not args:
            self._session.register_component("data_loader", shared)

    init._idem_watched = True  # type: ignore[attr-defined]
    boto3.session.Session.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        boto3.session.Session.__init__ = original  # type: ignore[method-assign]


class WatchedSession(boto3.Session):
    """A boto3 session whose clients cross the runtime's boundaries.

    Made-up credentials: requests can only ever reach moto. Clients are made once per
    service and options and shared (botocore clients are thread-safe), because building one
    costs more than many calls to moto; the hooks find the running invocation per thread.
    Each time a client is asked for, its retry quota is whole again, as a new client's is.
    """

    def __init__(self, region: str = REGION, credentials: Mapping[str, str] | None = None) -> None:
        keys = credentials or {"AccessKeyId": "testing", "SecretAccessKey": "testing", "SessionToken": "testing"}
        super().__init__(aws_access_key_id=keys["AccessKeyId"], aws_secret_access_key=keys["SecretAccessKey"],
                         aws_session_token=keys["SessionToken"], region_name=region)
        watch_events(self.events)
        self._clients: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        # a client copies the session's event hooks when it is built: one built before a hook was
        # registered (or after it was taken away) must not be handed out afterwards
        for name in ("register", "register_first", "register_last", "unregister"):
            setattr(self.events, name, self._forgetting_clients(getattr(self.events, name)))

    def _forgetting_clients(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def changed(*args: Any, **kwargs: Any) -> Any:
            self._clients.clear()
            return method(*args, **kwargs)
        return changed

    def client(self, service_name: str, region_name: str | None = None, **kwargs: Any) -> Any:  # type: ignore[override]
        options = _options_key(kwargs)
        if options is None:  # options that cannot be compared: a client of its own
            return super().client(service_name, region_name=region_name, **kwargs)
        with self._lock:
            key = (service_name, region_name, options)
            if key not in self._clients:
                with _quotas_kept() as quotas:
                    made = super().client(service_name, region_name=region_name, **kwargs)
                self._clients[key] = (made, quotas)
            made, quotas = self._clients[key]
            # as a client built now would have it: the whole retry quota of the standard retry mode
            # (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html; botocore
            # keeps one per client), since a cold start builds its clients anew
            for kept in quotas:
                kept._available_capacity = kept._max_capacity
            return made


def _options_key(kwargs: Mapping[str, Any]) -> str | None:
    """The client options as a comparable text (a botocore Config by the options it was given),
    or None when one of them is something else."""
    from botocore.config import Config

    plain = (str, int, float, bool, type(None), dict, list, tuple)
    parts = []
    for name, value in sorted(kwargs.items()):
        if isinstance(value, Config):
            value = ("Config", sorted(getattr(value, "_user_provided_options", {}).items()))
        elif not isinstance(value, plain):
            return None
        parts.append(f"{name}={value!r}")
    return "&".join(parts)


@contextlib.contextmanager
def _quotas_kept() -> Iterator[list[Any]]:
    """Collect the retry quotas botocore makes meanwhile (standard retry mode makes one per client)."""
    from botocore.retries import quota

    made: list[Any] = []
    original = quota.RetryQuota

    class Kept(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    quota.RetryQuota = Kept  # type: ignore[misc]
    try:
        yield made
    finally:
        quota.RetryQuota = original  # type: ignore[misc]


@functools.cache
def watched_session() -> WatchedSession:
    """The process's one watched session."""
    return WatchedSession()
