"""The handler patterns, by name. Each is `handle(obj, services, context) -> result`."""
from __future__ import annotations

from typing import Any, Callable

from ..events import S3Object
from . import claim_first, keyed, naive, robust
from .common import Services

Handler = Callable[[S3Object, Services, Any], dict[str, Any]]

HANDLERS: dict[str, Handler] = {
    "naive": naive.handle,
    "claim_first": claim_first.handle,
    "robust": robust.handle,
    "keyed": keyed.handle,
}
#: Patterns whose record has a `done` state: completed also requires it.
HAS_DONE_STATE = {"robust", "keyed"}


def get_handler(mode: str) -> Handler:
    try:
        return HANDLERS[mode]
    except KeyError:
        raise ValueError(f"unknown HANDLER_MODE {mode!r}; choose one of {', '.join(HANDLERS)}") from None
