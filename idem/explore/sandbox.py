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

import ast
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

#: Real seconds with no invocation finished before the check gives up (the engine's own bound
#: on one schedule, `check.SCHEDULE_SECONDS`, is 60 s and speaks first when it can).
STALL_SECONDS = 90.0
#: Real seconds the child may take to start (import moto, botocore's models) before its first beat.
STARTUP_SECONDS = 120.0
#: Real seconds the whole check may take (`--budget`).
BUDGET_SECONDS = 900.0
#: Real seconds a non-daemon thread the handler started may outlive the invocation that started it.
THREAD_GRACE = 5.0
#: Bytes of the child's own stdout and stderr kept (the handler's prints outside an invocation).
TAIL_BYTES = 16_384
BEAT, NOTE = b"\x01", b"\x02"
_IDEM = str(Path(__file__).resolve().parent.parent)
_STDLIB = tuple(p for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p)


def schema() -> dict[str, Any]:
    """The JSON schema `--json` follows, as shipped in the package."""
    text = resources.files("idem.explore").joinpath("check-report.schema.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def schema_version() -> int:
    return int(schema()["properties"]["schema_version"]["const"])


def error_json(exit_code: int, message: str, handler_traceback: str = "") -> dict[str, Any]:
    """The error shape of the schema, made without importing the check (and moto)."""
    return {"schema_version": schema_version(), "exit_code": exit_code, "error": message,
            "handler_traceback": handler_traceback or None}


# -- what Lambda's Python runtime cannot call ------------------------------------------------------
def handler_shape(target: str) -> str:
    """"" for a plain function, or what calling it returns instead of a value: "coroutine" (async
    def), "generator" (a def with yield) or "async generator". Read from the source, not run."""
    module, _, function = target.rpartition(":")
    path: str | None = module if module.endswith(".py") else None
    if path is None:
        try:
            import importlib.util

            spec = importlib.util.find_spec(module)
            path = spec.origin if spec else None
        except (ImportError, ValueError):
            return ""
    try:
        tree = ast.parse(Path(path or "").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ""  # the check itself says what is wrong with it
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            yields = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node))
            if isinstance(node, ast.AsyncFunctionDef):
                return "async generator" if yields else "coroutine"
            return "generator" if yields else ""
    return ""


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of functions or classes defined inside it."""
    found, todo = [], list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def refuse_shape(target: str, shape: str) -> str:
    """Why Lambda cannot run a handler of this shape (exit 2)."""
    # Lambda's Python runtime calls the handler and JSON-encodes what it returns; anything json
    # cannot encode fails the invocation with Runtime.MarshalError ("Unable to marshal response:
    # Object of type coroutine is not JSON serializable"): awslambdaric's bootstrap and
    # lambda_runtime_exception.py, https://github.com/aws/aws-lambda-python-runtime-interface-client
    kind = {"coroutine": "an async def", "generator": "a generator (a def with yield)",
            "async generator": "an async generator"}[shape]
    fix = ("Lambda's Python runtime awaits nothing: call it from a plain def, as in "
           "def lambda_handler(event, context): return asyncio.run(handle(event, context))"
           if shape != "generator" else "return a list instead of yielding")
    return (f"{target} is {kind}: Lambda's Python runtime calls it and gets a {shape} object back, which "
            f"it cannot return (Runtime.MarshalError: Unable to marshal response: Object of type "
            f"{shape.replace(' ', '_')} is not JSON serializable), so its body never runs, on every "
            f"invocation; {fix}")


# -- the parent's side -----------------------------------------------------------------------------
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
        env["PYTHONPATH"] = os.pathsep.join([str(Path(_IDEM).parent), *filter(None, [env.get("PYTHONPATH")])])
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
        return (f"{how_long}: the handler hangs (a loop, a lock, or a wait on time.time, a clock the check "
                f"moves only between calls); {LAMBDA_ON_HANG}; the check cannot judge it")
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
        return (f"the check's process was killed by {name} before it answered (the handler, or the machine "
                f"running out of memory): {LAMBDA_ON_EXIT}")
    said = f" (its last output: {output[-1][:200]})" if output else ""
    return (f"the check's process ended with exit code {code} before it answered: the handler ended it "
            f"(os._exit, or a library it calls){said}; {LAMBDA_ON_EXIT}")


# -- the child's side --------------------------------------------------------------------------------
class _Guard:
    """Inside the child: notes what the handler does to the process (os._exit, non-daemon
    threads, SIGALRM timers) and beats while invocations finish."""

    def __init__(self, fd: int, root: str) -> None:
        self.fd, self.root = fd, root
        self.real_exit = os._exit
        self.threads: list[tuple[threading.Thread, float, str]] = []
        self._last_beat = 0.0
        self._clock = time.perf_counter  # time-machine and the runtime move time.time and monotonic
        self._monitor_pid = 0
        self._alarm_noted = False

    # where the handler is, in the stack that called us
    def where(self) -> str:
        """The innermost frame of the handler's own code (not the standard library, not idem's
        machinery), as file:line; "" if none is on the stack."""
        for frame in reversed(traceback.extract_stack()[:-2]):
            if _handler_file(frame.filename):
                return f"{Path(frame.filename).name}:{frame.lineno}"
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
            where = guard.where()
            if where and not thread.daemon and not _idle_pool_worker(thread):
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
                # the runtime runs each invocation in a thread of its own (idem.sim.runtime.invocation_thread._Run),
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
        from ..sim import runtime
        from . import check

        def beating(function: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any, **kwargs: Any) -> Any:
                try:
                    return function(*args, **kwargs)
                finally:
                    self.beat()
            return call

        for owner, name in ((runtime.LocalLambda, "_invoke"), (check, "run_batch")):
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
    if filename.startswith(_IDEM):
        return f"{os.sep}core{os.sep}" in filename
    return True


def _idle_pool_worker(thread: threading.Thread) -> bool:
    """concurrent.futures' workers idle between tasks until their pool shuts down: no work left."""
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", "") == "concurrent.futures.thread"


def child_main(request_path: str, fd: int) -> None:
    request = json.loads(Path(request_path).read_text())
    guard = _Guard(fd, request["task_root"])
    answer: dict[str, Any]
    try:
        answer = _run_check(request, guard)
    except BaseException as error:  # the check itself failed: a tool error, never a verdict
        message = (f"idem check itself failed ({type(error).__name__}: {error}); this is a bug in idem, "
                   "not a verdict on the handler")
        answer = {"exit_code": 3, "text": message, "handler_traceback": traceback.format_exc(),
                  "json": error_json(3, message, traceback.format_exc())}
    left = guard.left_running()
    if left and answer["exit_code"] in (0, 1):
        thread, where = left[0]
        message = (f"the handler started a non-daemon thread ({thread.name}, at {where}) that is still running "
                   "after every invocation returned: on Lambda it is frozen with the execution environment and "
                   "runs on inside later invocations "
                   "(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), so its work "
                   "belongs to no invocation and the check cannot judge it; join the thread before returning")
        answer = {"exit_code": 3, "text": message, "json": error_json(3, message)}
    temporary = Path(request["answer"] + ".part")
    temporary.write_text(json.dumps(answer))
    temporary.replace(request["answer"])
    sys.stdout.flush()
    sys.stderr.flush()
    guard.real_exit(0)  # now: a normal exit would wait for the non-daemon threads the handler left


def _run_check(request: dict[str, Any], guard: _Guard) -> dict[str, Any]:
    try:
        from . import check
    except ModuleNotFoundError as missing:
        message = (f"idem check needs {missing.name}, from the package's check extra: install it with "
                   "pip install '<path to this repository or its wheel>[check]'")
        return {"exit_code": 2, "text": message, "json": error_json(2, message)}
    from . import dependencies, lambda_tmp, objects, stand_ins, template_run

    root = request["task_root"]
    # Lambda: the function's folder first on sys.path (its packages import). The working
    # directory stays where the check was started, so the target reads as it was given.
    sys.path.insert(0, root)
    dependencies.add_paths(request.get("python_path", []))  # --python-path: its packages, its layers
    guard.install()
    lambda_tmp.install([root, *request.get("python_path", [])], base=str(Path(request["answer"]).parent))  # each execution environment's own /tmp, removed after each batch
    stand_ins.setup(request.get("answers", []), check)  # calls moto lacks: answered, and named
    if request["options"].get("provider") == "stripe":  # Stripe's SDK, called directly too
        from .stripe_sdk import aim_sdk_at_loopback

        aim_sdk_at_loopback()
    if request.get("schedule_seconds"):
        check.SCHEDULE_SECONDS = float(request["schedule_seconds"])
    options = dict(request["options"])
    try:
        uploads = objects.paired([objects.UserObject.parse(spec) for spec in request.get("objects", [])])
        template_run.prepare(request, uploads, _run_setup)  # --template: its resources, bucket and key filter
        if request.get("setup"):
            options["env"] = {**_run_setup(request["setup"]), **options["env"]}
    except (objects.BadObject, SetupFailed, template_run.TemplateSetupFailed) as bad:
        return {"exit_code": 2, "text": str(bad), "handler_traceback": getattr(bad, "handler_traceback", ""),
                "json": error_json(2, str(bad), getattr(bad, "handler_traceback", ""))}
    clean = _CleanRun(check)
    answers = []
    for upload in uploads or [None]:
        if upload is not None:
            objects.install(upload)
        clean.missing = None
        try:
            report = check.check_handler(request["target"], **options)
            if clean.resource_missing(report):  # the clean run failed on a resource that is nowhere:
                raise check.CheckInputError("the handler fails on a clean run")  # input, not a break
        except check.CheckInputError as error:
            message = dependencies.explain(clean.explain(error), root, request.get("python_path", []))
            if upload is not None and len(uploads) > 1:
                message = f"--object {upload.path}: {message}"
            error.args = (message,)
            return {"exit_code": error.exit_code, "text": message, "handler_traceback": error.handler_traceback,
                    "json": check.error_json(error)}
        answer = report.to_json()
        if upload is not None:
            answer["object"] = {"file": upload.path, "key": upload.key}
        text = report.explain() if upload is None else f"--object {upload.path} (as {upload.key}):\n{report.explain()}"
        answers.append((report.holds, text, answer))
    json_answer = next((a for holds, _, a in answers if not holds), answers[-1][2])
    if len(answers) > 1:
        json_answer = {**json_answer, "objects": [{**a["object"], "holds": holds} for holds, _, a in answers]}
    holds = all(h for h, _, _ in answers)
    return {"exit_code": 0 if holds else 1, "text": "\n\n".join(t for _, t, _ in answers), "json": json_answer}


class SetupFailed(Exception):
    """The team's --setup function failed or is not there (exit 2)."""

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


def _run_setup(spec: str) -> dict[str, str]:
    """Run `--setup MODULE:FUNCTION` once on the check's AWS (moto, before any world), given a
    boto3 Session there; a dict it returns is added to the handler's environment (under --env)."""
    import importlib
    import importlib.util

    import boto3

    from ..sim.world import REGION, ensure_moto

    module_name, sep, function = spec.rpartition(":")
    if not sep or not module_name or not function:
        raise SetupFailed(f"--setup {spec!r} is not MODULE:FUNCTION or FILE.py:FUNCTION")
    ensure_moto()
    try:
        if module_name.endswith(".py"):
            found = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if found is None or found.loader is None or not Path(module_name).is_file():
                raise SetupFailed(f"--setup {spec}: no file {module_name}")
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        made = getattr(module, function)(boto3.Session(region_name=REGION))
    except SetupFailed:
        raise
    except Exception as error:
        raise SetupFailed(f"--setup {spec} failed: {type(error).__name__}: {error}", traceback.format_exc()) from None
    if made is None:
        return {}
    if not isinstance(made, dict) or not all(isinstance(k, str) for k in made):
        raise SetupFailed(f"--setup {spec} returned {type(made).__name__}: return None, or a dict of "
                          "settings for the handler's environment")
    return {k: str(v) for k, v in made.items()}


#: What moto (as AWS) answers for a resource that does not exist, by error code.
NOT_FOUND = ("ResourceNotFoundException", "NonExistentQueue", "AWS.SimpleQueueService.NonExistentQueue",
             "QueueDoesNotExist", "NotFound", "NotFoundException", "NoSuchBucket", "MessageRejected",
             "StateMachineDoesNotExist", "ResourceNotFound")
#: The parameters that name the resource a call is about.
NAMES = ("TableName", "QueueUrl", "TopicArn", "TargetArn", "Bucket", "Source", "FromEmailAddress",
         "StateMachineArn", "EventBusName", "FunctionName", "StreamName", "DeliveryStreamName", "SecretId", "Name")


class _CleanRun:
    """Remembers the clean run (its return value and last log lines) and the last call of the
    handler that AWS answered "no such resource", to say both when the clean run is refused."""

    def __init__(self, check: Any) -> None:
        self.result: Any = None
        self.missing: tuple[str, str, str, str] | None = None
        real_batch = check.run_batch

        def run_batch(*args: Any, **kwargs: Any) -> Any:
            results = real_batch(*args, **kwargs)
            first = args[5] if len(args) > 5 else kwargs.get("first")
            if first == getattr(check, "CLEAN_RUN", None) and results:
                self.result = results[0]
            return results

        check.run_batch = run_batch
        import botocore.client
        from botocore.exceptions import ClientError

        real_call = botocore.client.BaseClient._make_api_call
        watcher = self

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            try:
                return real_call(client, operation, params)
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", ""))
                named = next(((n, params[n]) for n in NAMES if isinstance(params.get(n), str)), None)
                if named and (code in NOT_FOUND or "does not exist" in str(error) or "not found" in str(error)):
                    service = client.meta.service_model.service_name
                    watcher.missing = (f"{service}:{operation}", named[0], named[1], code)
                raise

        botocore.client.BaseClient._make_api_call = call  # type: ignore[method-assign]

    def resource_missing(self, report: Any) -> bool:
        """The report is the clean run's break (it failed with no fault) and what failed it is AWS
        answering "no such resource" to the handler's call: the check's AWS lacks what the team's
        own has (a topic, a queue), which is input to give (exit 2), not the handler's break (1)."""
        results = getattr(report, "results", [])
        if self.missing is None or len(results) != 1 or not getattr(results[0], "clean", False):
            return False
        code = self.missing[3]
        return any(a.failed and code in str(getattr(a, "error", "")) for a in results[0].attempts)

    def explain(self, error: Any) -> str:
        message = str(error)
        clean_failed = "on a clean run" in message
        if clean_failed and self.missing:
            call, param, value, code = self.missing
            return (f"the handler called {call} with {param}={value}, which exists nowhere in the check's AWS "
                    f"({code}): create it with --template template.yaml --function LOGICAL_ID (the template's "
                    "resources are made with their names) or --setup MODULE:FUNCTION (your own set-up, given a "
                    "boto3 Session on the check's AWS), and give the handler its name with --env NAME=VALUE")
        if clean_failed and self.result is not None and ("made no charge" in message or "never happens" in message):
            attempt = self.result.attempts[0] if self.result.attempts else None
            if attempt is not None:
                returned = repr(getattr(attempt, "result", None))
                logs = [line[:200] for line in getattr(attempt, "logs", [])[-3:]]
                message += (f" On the clean run it returned {returned[:300]}"
                            + (f" and its last log lines were: {' | '.join(logs)}" if logs else " and printed nothing"))
        return message


if __name__ == "__main__":
    child_main(sys.argv[1], int(sys.argv[2]))
