"""The entry point with a handle function of your own: `idem.core.entry.App`, its handler swapped.

`HANDLE_FILE` names the function as `path/to/file.py:handle`. It has the shape of the workbook's
handlers (`handle(obj, services, context) -> result`, see `idem.core.handlers.robust`), and it
runs with the same services, the same event reading and the same failure rules as they do.
The local runtime loads this module as it loads `idem.core.entry`: a fresh copy per cold
container, which loads the file afresh, so an edited file is picked up by the next run.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from ...core import entry as core
from ...core.errors import ConfigError

HANDLE_FILE = "HANDLE_FILE"


def load_handle(spec: str) -> Callable[..., dict[str, Any]]:
    """The function `spec` names: `file.py:function`, or `file.py` for its `handle`."""
    path, _, name = spec.rpartition(":") if not spec.endswith(".py") else (spec, "", "handle")
    if not Path(path).is_file():
        raise ConfigError(f"{HANDLE_FILE}: no file {path}")
    found = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigError(f"{path} defines no function {name}(obj, svc, context)")
    return function


class App(core.App):
    @classmethod
    def from_environment(cls, env: Mapping[str, str], **kwargs: Any) -> "App":
        if not env.get(HANDLE_FILE):
            raise ConfigError(f"{HANDLE_FILE} is not set: name the handle function as file.py:handle")
        app = super().from_environment(env, **kwargs)
        app.handler = load_handle(env[HANDLE_FILE])
        return app


_app: App | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    global _app
    if _app is None:
        _app = App.from_environment(os.environ)
    return _app.handle(event, context)
