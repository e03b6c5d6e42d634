"""A cold start: the function's module loaded afresh in a new container, as Lambda's Init phase
loads it, and what the runtime reports when it cannot be loaded (the handler's own traceback)."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import linecache
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator

from .process_hash import environment_builtins


class Container:
    """An execution environment: its own copy of the entry module and its globals, and of the
    function's other modules (`own`: those its Init imported, and those a later call imported first).
    On Lambda each environment is a process of its own
    (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html): a module is
    never one environment's and another's."""

    def __init__(self, name: str, entry: str) -> None:
        self.name = name
        self.own: dict[str, ModuleType] = {}
        self.module = _load_fresh(entry, salt=name, own=self.own)
        self._owner = _owner_of(entry)
        self.busy = False
        self.invocations = 0

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """While this environment runs a call: the function's module names are its own copies, and a
        module of the function's imported first meanwhile is imported afresh (with the
        environment's `hash()`) and kept for this environment alone. Put back afterwards, so a
        call nested in another environment's (a copy at a boundary) leaves that one's as it was.
        The workbook's own handlers (`idem.`) keep one copy of each module (`_owner_of`)."""
        owner = self._owner
        if owner is None:
            yield
            return
        seen = _SEEN_OWN.setdefault(owner.entry, set())
        saved = {name: sys.modules.pop(name) for name in list(seen) if name in sys.modules}
        sys.modules.update(self.own)
        before = set(sys.modules)
        salted = _SaltedImports(self.name, owner.entry)
        sys.meta_path.insert(0, salted)
        try:
            yield
        finally:
            sys.meta_path.remove(salted)
            self.own.update(owner.among(set(sys.modules) - before))
            seen.update(self.own)
            for name in self.own:
                sys.modules.pop(name, None)
            sys.modules.update(saved)


def _load_fresh(module_name: str, salt: str = "", own: dict[str, ModuleType] | None = None) -> ModuleType:
    """A new copy of the module (a dotted name, or a path to a .py file), as a cold start loads it:
    its top-level code runs again in fresh globals (compiled once per process). A team's module sees
    its environment's own `hash()` (`process_hash`: each environment is a process of its own).
    The function's other modules its top level imports are fresh copies too, put in `own` and taken
    out of sys.modules afterwards (`Container.running` puts them back while the environment runs)."""
    found = os.stat(module_name) if module_name.endswith(".py") else None
    stamp = (found.st_mtime_ns, found.st_size) if found else (0, 0)
    spec, code = _compiled(module_name, stamp)  # an edited file is compiled again
    module = importlib.util.module_from_spec(spec)
    if spec.name.split(".")[0] != "idem":
        module.__dict__["__builtins__"] = environment_builtins(salt)
    # The function's own other modules (its helpers beside it) are imported afresh too, as in a
    # new process: a new execution environment's Init phase runs the function's static code
    # (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), so state one
    # of them keeps at module level (a cache, a remembered key) must not outlive the environment
    # that made it. What was there before (another environment's, running now) is put back.
    owner = _owner_of(module_name)
    earlier = {name: sys.modules.pop(name) for name in _own_modules(module_name, spec)}
    seen = _SEEN_OWN.setdefault(owner.entry, set()) if owner else set()
    earlier.update((name, sys.modules.pop(name)) for name in list(seen) if name in sys.modules)
    before = set(sys.modules) if owner else set()
    # In sys.modules while its top level runs, as an import has it: a @dataclass (or pickle,
    # or typing) looks its module up there. The previous entry is put back afterwards.
    previous = sys.modules.get(spec.name)
    sys.modules[spec.name] = module
    # the function's helpers it imports meanwhile see this environment's hash() too
    salted = _SaltedImports(salt, spec.origin or module_name) if "__builtins__" in module.__dict__ else None
    if salted:
        sys.meta_path.insert(0, salted)
    try:
        exec(code, module.__dict__)
    finally:
        if salted:
            sys.meta_path.remove(salted)
        fresh = owner.among(set(sys.modules) - before - {spec.name}) if owner else {}
        if own is not None and owner:
            own.update(fresh)
            own[spec.name] = module
        seen.update(fresh)
        for name in fresh:
            del sys.modules[name]
        if previous is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = previous
        sys.modules.update(earlier)
    return module


#: per function (its entry's file), every module name one of its environments has had as its own:
#: none is left in sys.modules for another of its environments
_SEEN_OWN: dict[str, set[str]] = {}


class _SaltedImports:
    """A finder for the duration of a cold start: a module of the function's own folder (not an
    installed package there, not idem's) that its entry module imports is executed with the
    environment's builtins (`process_hash`), as the entry module is."""

    def __init__(self, salt: str, entry: str) -> None:
        self.salt = salt
        self.folder = os.path.dirname(os.path.realpath(entry)) + os.sep

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if isinstance(finder, _SaltedImports) or not hasattr(finder, "find_spec"):  # nested: the innermost's
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            where = os.path.realpath(spec.origin) if isinstance(spec.origin, str) and spec.has_location else ""
            own = (where.startswith(self.folder) and not where.startswith(_OURS)
                   and "site-packages" not in where and "dist-packages" not in where)
            if not own or not hasattr(spec.loader, "exec_module"):
                return None  # the usual finders find it again, as they would have
            spec.loader = _SaltedLoader(spec.loader, self.salt)
            return spec
        return None


class _SaltedLoader:
    """A module's own loader, executing it with its environment's builtins."""

    def __init__(self, inner: Any, salt: str) -> None:
        self.inner, self.salt = inner, salt

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = environment_builtins(self.salt)
        self.inner.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ...: the inner loader's
        return getattr(self.inner, name)


def _own_modules(module_name: str, spec: Any) -> list[str]:
    """The modules already imported that are the function's own code besides its entry module:
    for a file, those in its folder (not an installed package there); for a dotted name, the rest
    of its top-level package, or, for a top-level module, those beside it. The workbook's own
    handlers (`idem.`) are left out: their helpers keep no state between invocations, and the check
    tells their errors by class, which a second copy of each module would make a different class."""
    owner = _owner_of(module_name)
    if owner is None:
        return []
    # read again only when a module was imported or dropped since (a cold start's fresh copies
    # replace the earlier ones under the same names)
    key = (module_name, spec.name, len(sys.modules))
    if key not in _OWN_FOUND:
        _OWN_FOUND.clear()
        _OWN_FOUND[key] = [name for name in owner.among(list(sys.modules)) if name != spec.name]
    return _OWN_FOUND[key]


_OWN_FOUND: dict[tuple[str, str, int], list[str]] = {}


@dataclass(frozen=True)
class _Owner:
    """Which modules are a function's own: the rest of its package (`top`), or those in its folder."""

    entry: str  # the entry module's file
    top: str  # for a module of a package named by a dotted name: the package; else ""
    folders: tuple[str, ...]  # otherwise: the entry's folder, as given and as resolved

    def among(self, names: Iterable[str]) -> dict[str, ModuleType]:
        """Those of `names` (each in sys.modules) that are the function's own modules."""
        return {name: sys.modules[name] for name in names
                if (name.split(".")[0] == self.top if self.top else self._beside(sys.modules[name]))}

    def _beside(self, loaded: Any) -> bool:
        where = getattr(loaded, "__file__", None)
        return isinstance(where, str) and where.startswith(self.folders) and not where.startswith(_OURS) \
            and "site-packages" not in where and "dist-packages" not in where


@functools.lru_cache(maxsize=64)
def _owner_of(module_name: str) -> _Owner | None:
    """How to tell the function's own modules (None for the workbook's own handlers, `idem.`)."""
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
    else:
        spec = importlib.util.find_spec(module_name)
    if spec is None or spec.name.split(".")[0] == "idem":
        return None
    entry = spec.origin or module_name
    if "." in spec.name and not module_name.endswith(".py"):
        return _Owner(entry, spec.name.split(".")[0], ())
    # the folder as given and as resolved: a module's __file__ starts with the sys.path entry it
    # was found under, either one
    folders = tuple(dict.fromkeys((os.path.dirname(os.path.abspath(entry)) + os.sep,
                                   os.path.dirname(os.path.realpath(entry)) + os.sep)))
    return _Owner(entry, "", folders)


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


#: the package's own folder (idem/): frames from here are the runtime's, not the handler's
_OURS = str(Path(__file__).resolve().parents[2])


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
