"""What makes a handler one the check cannot judge, found before or while it runs.

- It cannot be called as Lambda calls it (`callable_problem`): the name is not a function, or the
  function does not take `(event, context)`. Lambda's Python runtime calls the handler with two
  arguments, the event and the context object
  (https://docs.aws.amazon.com/lambda/latest/dg/python-handler.html): bad input (exit 2).
- It needs a setting it was not given (`missing_setting`): its clean run fails with a KeyError
  reading `os.environ`. Bad input too (exit 2): the reader passes it with `--env NAME=VALUE`.
- Its clean run fails on its own (`clean_run_hint`): what to do where the error says it, a field of
  another trigger's event (check `--trigger`) or a setting (`--env`), and nothing where it does not.
- It starts another process (`no_subprocesses`): what that process does crosses no boundary the
  check watches, so no verdict can be trusted (exit 3). The start is refused inside the handler.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import re
import subprocess
import traceback
import types
from typing import Any, Iterator

from ..boundary import current

_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def callable_problem(module: Any, name: str) -> str:
    """"" when `module.name` can be called with (event, context); else what is wrong, in words."""
    function = getattr(module, name, None)
    where = getattr(module, "__file__", None) or getattr(module, "__name__", "the module")
    if function is None:
        return f"{os.path.basename(where)} has no {name} once loaded: name the function Lambda calls"
    if not callable(function):
        return (f"{os.path.basename(where)}:{name} is a {type(function).__name__}, not a function: Lambda "
                "cannot call it (Handler names a function taking (event, context))")
    problem = _binding_problem(function)
    if problem:
        return f"{os.path.basename(where)}:{name} cannot be called as Lambda calls it, with (event, context): {problem}"
    return ""


#: `_binding_problem`'s answers for plain functions, by what their parameters depend on alone
_BINDINGS: dict[tuple[Any, ...], str] = {}


def _binding_problem(function: Any) -> str:
    """Why `function(event, context)` cannot bind ("" if it can). Each cold start loads a fresh copy
    of the handler's module, so the same function comes back as a new object at every one; for a
    plain function (no `__wrapped__`, no `__signature__`) the answer depends only on its code and
    which of its parameters have defaults, and is worked out once for those."""
    plain = type(function) is types.FunctionType and not hasattr(function, "__wrapped__") \
        and not hasattr(function, "__signature__")
    key = (function.__code__, len(function.__defaults__ or ()), frozenset(function.__kwdefaults__ or ())) \
        if plain else None
    if key is not None and key in _BINDINGS:
        return _BINDINGS[key]
    try:
        inspect.signature(function).bind({}, None)
        problem = ""
    except TypeError as error:
        problem = str(error)
    except ValueError:
        problem = ""  # a builtin with no signature: let the call say
    if key is not None:
        _BINDINGS[key] = problem
    return problem


def missing_setting(error_text: str, handler_traceback: str, env: dict[str, str]) -> str:
    """Where a failed clean run read an environment variable it did not find ("at FILE:LINE"), or ""."""
    key = _key_error(error_text)
    if not key or key in env:
        return ""
    places = [p for p in re.findall(r'File "([^"]+)", line (\d+)', handler_traceback) if not p[0].startswith("<")]
    if "environ" not in _failing_line(handler_traceback):
        return ""
    return f"at {os.path.basename(places[-1][0])}:{places[-1][1]}" if places else "in the handler"


def _key_error(error_text: str) -> str:
    """The key of a KeyError as an attempt's error reads ("KeyError: 'TABLE'"), or ""."""
    found = re.fullmatch(r"KeyError: '([^']+)'", error_text.strip())
    return found.group(1) if found else ""


def _failing_line(handler_traceback: str) -> str:
    """The source line the traceback ends on (its last indented line), or ""."""
    lines = [line.strip() for line in handler_traceback.splitlines() if line.startswith("    ")]
    return lines[-1] if lines else ""


#: The top-level fields of each trigger's event (or of its records) a handler reads first, as the check
#: sends them (idem.sim.triggers): S3's event notification
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html), SQS's
#: messages (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html) and EventBridge's event
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html).
EVENT_FIELDS = {
    "s3": ({"Records", "s3", "eventName", "eventTime", "eventSource", "eventVersion", "userIdentity",
            "requestParameters", "responseElements", "awsRegion"}, "S3's event notification"),
    "sqs": ({"Records", "body", "messageId", "receiptHandle", "attributes", "messageAttributes", "md5OfBody",
             "eventSource", "eventSourceARN", "awsRegion"}, "SQS messages, each an S3 event notification in its body"),
    "eventbridge": ({"detail", "detail-type", "source", "id", "time", "resources", "region", "account", "version"},
                    "EventBridge's Object Created event"),
}


def clean_run_hint(error_text: str, handler_traceback: str, trigger: str, env: dict[str, str]) -> str:
    """What to do about a clean run that fails, where the error says: a KeyError on a field of another
    trigger's event than the one sent (check --trigger), or on a setting (--env). "" otherwise: a
    RecursionError or a missing file is the handler's own, no setting and no trigger."""
    key = _key_error(error_text)
    sent = EVENT_FIELDS.get(trigger, (set(), trigger))
    others = [name for name, (fields, _) in EVENT_FIELDS.items() if key in fields - sent[0]]
    if others:
        return (f". The handler could not read the event the check sent (--trigger {trigger}: {sent[1]}): "
                f"{key!r} is a field of {' and '.join(EVENT_FIELDS[n][1] for n in others)}; is the function fed "
                "by another trigger? Check --trigger")
    if key in env:
        return ""
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", key) or re.search(r"\benviron\b|\bgetenv\b", _failing_line(handler_traceback)):
        return f". If it needs a setting, pass it with --env {key or 'NAME'}=VALUE"
    return ""


def import_hint(error: BaseException, handler_traceback: str, env: dict[str, str]) -> str:
    """What to do about the handler's error at import, where the check can say: a setting its top level
    reads from os.environ (`TABLE = os.environ["TABLE"]`) that the check was not given. "" otherwise."""
    where = missing_setting(f"{type(error).__name__}: {error}", handler_traceback, env)
    if not where:
        return ""
    name = str(error.args[0]) if error.args else ""
    return f" ({where}): the handler needs the setting {name}, which the check was not given; pass it with --env {name}=VALUE"


#: The standard library's own probes of the machine, which start a process to ask it (`uname -p` for
#: platform.processor(), as Stripe's SDK asks for its user agent; ifconfig for uuid.getnode; ldconfig
#: for ctypes.util.find_library): they report, they change nothing the check watches.
_PROBES = ("platform.py", "uuid.py", os.path.join("ctypes", "util.py"))


def _probing() -> bool:
    """Is the process being started by one of the standard library's probes (`_PROBES`)?"""
    stdlib = os.path.dirname(os.__file__)
    return any(frame.filename.startswith(stdlib) and frame.filename.endswith(_PROBES)
               for frame in traceback.extract_stack())


def _handler_frame() -> str:
    """file:line of the innermost frame that is the handler's own (not Python's, not idem's)."""
    stdlib = os.path.dirname(os.__file__)
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = frame.filename
        if not path.startswith((stdlib, _OURS)) and "site-packages" not in path and not path.startswith("<"):
            return f"{os.path.basename(path)}:{frame.lineno}"
    return "an unknown place"


@contextlib.contextmanager
def no_subprocesses() -> Iterator[list[str]]:
    """While it lasts, a handler (code running inside an invocation) that starts a process is
    refused (PermissionError) and named in the list yielded; the check's own processes are not."""
    started: list[str] = []
    real_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    real = {name: getattr(os, name) for name in ("system", "fork", "posix_spawn", "posix_spawnp", "forkpty")
            if hasattr(os, name)}

    def refuse(what: str) -> PermissionError:
        started.append(f"{what} at {_handler_frame()}")
        return PermissionError(f"idem check refuses to start a process ({what}): its effects cross no "
                               "boundary the check watches")

    def execute_child(self: Any, args: Any, *rest: Any, **kwargs: Any) -> Any:
        if current() is not None and not _probing():
            shown = args if isinstance(args, (str, bytes)) else " ".join(map(str, args))
            raise refuse(f"subprocess {str(shown)[:80]!r}")
        return real_child(self, args, *rest, **kwargs)

    def guarded(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if current() is not None and not _probing():
                raise refuse(f"os.{name}")
            return real[name](*args, **kwargs)
        return call

    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    for name in real:
        setattr(os, name, guarded(name))
    try:
        yield started
    finally:
        subprocess.Popen._execute_child = real_child  # type: ignore[attr-defined]
        for name, function in real.items():
            setattr(os, name, function)


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

