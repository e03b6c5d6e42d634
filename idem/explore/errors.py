"""How `idem check` ends other than with its report: bad input (exit 2), a check that could not
finish (exit 3), and a clean run that is already wrong (the report itself, exit 1)."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

from ..core.errors import IdemError
from ..sim.runtime import HandlerExited, HandlerNotLoaded, ScheduleTimedOut

if TYPE_CHECKING:
    from .judge.result import Result


class CheckInputError(IdemError, ValueError):
    """The check cannot start: say what was wrong and what to do (exit 2). `handler_traceback`
    is the handler's own traceback, when its code is what failed."""

    exit_code = 2

    def __init__(self, message: str, handler_traceback: str = "") -> None:
        super().__init__(message)
        self.handler_traceback = handler_traceback


class CleanRunBreaks(Exception):
    """The clean run (no fault, one delivery) is already wrong: it fails, or its books disagree with
    its money. That is the report (exit 1, with the clean run's timeline), not bad input."""

    def __init__(self, result: "Result") -> None:
        super().__init__("; ".join(result.findings))
        self.result = result


class CheckCouldNotFinish(CheckInputError):
    """The check could not finish (exit 3): the handler hung past every bound, ended the
    process, or did what the local runtime cannot model (a call to the internet)."""

    exit_code = 3


@contextlib.contextmanager
def as_tool_errors() -> Iterator[None]:
    """What goes wrong with the handler itself, as the check's exit 2 or 3 (never as a break)."""
    try:
        yield
    except HandlerNotLoaded as error:
        raise CheckInputError(str(error), error.handler_traceback) from None
    except HandlerExited as error:
        raise CheckCouldNotFinish(f"{error}: a function that ends its own process is not something "
                                  "the check can judge; raise an exception (a subclass of Exception) instead") from None
    except ScheduleTimedOut as error:
        raise CheckCouldNotFinish(str(error)) from None

