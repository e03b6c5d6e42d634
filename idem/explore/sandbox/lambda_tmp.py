"""Each execution environment's own `/tmp`, as on Lambda, and none of it left behind.

On Lambda each execution environment has its own `/tmp` (ephemeral storage, 512 MB to 10 GB):
kept between the invocations that environment serves, never seen by another
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html,
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). In the check every
environment is a `Container` of the local runtime, in one process: while the function's code runs
(its Init phase, or an invocation), a path under `/tmp` it gives to Python's file functions
(`open`, `os.open`, `os.stat`, `os.listdir`, `os.scandir`, `os.mkdir`, `os.remove`, `os.rename`,
...; `pathlib`, `tempfile`, `shutil` and boto3's downloads go through them) is its environment's
own folder under the check's scratch folder instead. The folders go when each batch of schedules
ends. The function's own code folder (and inline code) is read where it is, and so is the Python
running the check when it lives under /tmp (a CI job's venv, say). A path a C extension
opens itself (sqlite3, say) is not redirected.

While its code runs, the working directory is the function's folder too, as Lambda's is its task
root (`LAMBDA_TASK_ROOT`): a function that opens `job.json` beside it finds it.
"""
from __future__ import annotations

import builtins
import io
import itertools
import os
import shutil
import tempfile
from typing import Any, Callable

_stack: list[str] = []  # the running environments' folders, innermost last
_made: list[str] = []  # every folder made in this process since the last cleanup
_keep: list[str] = []  # real paths under /tmp that stay themselves (the function's code)
_count = itertools.count(1)
_task_root: list[str] = []  # the function's folder: the working directory while its code runs
_installed = [False]


_base: list[str] = []  # where the folders go: the check's scratch folder (its parent removes it)


def _root() -> str:
    return os.path.join(_base[0] if _base else tempfile.gettempdir(), f"idem-lambda-tmp-{os.getpid()}")


def new_folder() -> str:
    """A fresh /tmp for one execution environment."""
    folder = os.path.join(_root(), f"env{next(_count)}")
    _real["makedirs"](folder, exist_ok=True)
    _made.append(folder)
    return folder


def mapped(path: Any) -> Any:
    """`path`, or its place in the running environment's /tmp."""
    if not _stack or not isinstance(path, (str, os.PathLike)):
        return path
    text = os.fspath(path)
    if not isinstance(text, str) or not (text == "/tmp" or text.startswith("/tmp/")):
        return path
    if text.startswith(_root()) or any(text == k or text.startswith(k.rstrip("/") + "/") for k in _keep) \
            or text.startswith("/tmp/idem-inline-"):
        return path
    return _stack[-1] + text[len("/tmp"):]


_ONE_PATH = ("open", "stat", "lstat", "listdir", "scandir", "mkdir", "remove", "unlink", "rmdir",
             "access", "chmod", "utime", "truncate")
_real: dict[str, Callable[..., Any]] = {"makedirs": os.makedirs}


def _patched_one(real: Callable[..., Any]) -> Callable[..., Any]:
    def call(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
        return real(mapped(path), *args, **kwargs)
    call.__wrapped__ = real  # type: ignore[attr-defined]
    return call


def _patched_two(real: Callable[..., Any]) -> Callable[..., Any]:
    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        return real(mapped(src), mapped(dst), *args, **kwargs)
    call.__wrapped__ = real  # type: ignore[attr-defined]
    return call


def host_python() -> list[str]:
    """The folders of the Python running the check that lie under /tmp: its prefix and what is on
    its path (a CI job's or Binder's venv, a PYTHONPATH entry). On Lambda nothing the runtime or
    the function imports lives in /tmp (the code is in /var/task, Layers in /opt), so these are
    the host's install, read where they are: botocore's endpoints.json, a module's own files."""
    import sys

    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path]
    return [p for p in dict.fromkeys(os.path.abspath(p) for p in found if p)
            if p.startswith("/tmp/") or os.path.realpath(p).startswith("/tmp/")]


def install(keep: list[str], base: str = "") -> None:
    """From now on in this process: each environment the runtime starts has its own /tmp while
    its code runs; `keep` are real folders (the function's code) that stay where they are; `base`
    is where the folders go (the sandbox's scratch folder, which its parent removes even when it
    kills the check)."""
    _base[:] = [base] if base else []
    keep = [*keep, *host_python()]
    _keep[:] = [os.path.realpath(k) for k in keep if k] + [k for k in keep if k]
    _task_root[:] = [k for k in keep if k][:1]
    if _installed[0]:
        return
    _installed[0] = True
    from ...sim import runtime
    from ..run import runner

    for name in _ONE_PATH:
        _real[name] = getattr(os, name)
        setattr(os, name, _patched_one(_real[name]))
    for name in ("rename", "replace"):
        _real[name] = getattr(os, name)
        setattr(os, name, _patched_two(_real[name]))
    opener = _patched_one(io.open)
    _real["io.open"] = io.open
    builtins.open = io.open = opener  # type: ignore[assignment]
    _rebind_captured()

    real_init = runtime.Container.__init__

    def init(self: Any, name: str, entry: str) -> None:
        self.tmp_folder = new_folder()  # the Init phase writes there too
        _stack.append(self.tmp_folder)
        saved = _enter_task_root()
        try:
            real_init(self, name, entry)
        finally:
            _stack.pop()
            _leave(saved)

    real_acquire = runtime.LocalLambda._acquire

    def acquire(self: Any) -> Any:
        container, cold = real_acquire(self)
        _stack.append(getattr(container, "tmp_folder", "") or new_folder())
        return container, cold

    real_invoke = runtime.LocalLambda._invoke

    def invoke(self: Any, pending: Any) -> Any:
        depth = len(_stack)
        saved = _enter_task_root()
        try:
            return real_invoke(self, pending)
        finally:
            del _stack[depth:]
            _leave(saved)

    real_batch = runner.run_batch

    def run_batch(*args: Any, **kwargs: Any) -> Any:
        try:
            return real_batch(*args, **kwargs)
        finally:
            cleanup()

    runtime.Container.__init__ = init  # type: ignore[method-assign]
    runtime.LocalLambda._acquire = acquire  # type: ignore[method-assign]
    runtime.LocalLambda._invoke = invoke  # type: ignore[method-assign]
    runner.run_batch = run_batch


def _enter_task_root() -> str:
    """Work in the function's folder (returns where the process was)."""
    saved = os.getcwd()
    if _task_root and saved != _task_root[0]:
        os.chdir(_task_root[0])
    return saved


def _leave(saved: str) -> None:
    if os.getcwd() != saved:
        os.chdir(saved)


def _rebind_captured() -> None:
    """Modules already loaded that keep their own reference to one of those functions
    (`rename_file = os.rename` in s3transfer, say) get the redirecting one."""
    import sys

    patched = {id(_real[n]): getattr(os, n) for n in (*_ONE_PATH, "rename", "replace")}
    patched[id(_real["io.open"])] = io.open
    for name, module in list(sys.modules.items()):
        if module is None or module in (os, io, builtins) or name == __name__:
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if callable(value) and id(value) in patched and value is not patched[id(value)]:
                try:
                    setattr(module, attr, patched[id(value)])
                except (AttributeError, TypeError):
                    pass


def cleanup() -> None:
    """Remove every environment's /tmp made in this process so far."""
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)
    try:
        _real.get("rmdir", os.rmdir)(_root())
    except OSError:
        pass
