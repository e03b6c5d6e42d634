"""The Lambda service, locally: asynchronous invocations on a virtual clock, and the functions it runs.

`local_lambda` is the service (the async queue, retries, containers, the maximum event age, the
failure queue); `cold_start` loads a function's module in a new container; `on_lambda` is what a
function sees there (settings, boto3's session, one virtual clock); `invocation_thread` runs each
invocation in a thread a crash can park for good; `delays` is when Lambda retries; `handler_guard`
finds what makes a handler one the check cannot judge (and keeps a check off the network);
`logtail` keeps the last lines a handler prints. `handle_entry` and `noop_entry` are entry modules
it runs besides `idem.core.entry`: a handle function of your own, and a no-op for the benchmark.

The names the rest of the workbook uses are handed on here: `from idem.sim.runtime import LocalLambda`.
"""
from .cold_start import Container, HandlerExited, HandlerNotLoaded, handler_traceback
from .delays import RETRY_DELAYS
from .handler_guard import loopback_only
from .invocation_thread import ScheduleTimedOut, schedule_deadline
from .local_lambda import DEFAULT_MAX_EVENT_AGE, Attempt, LambdaContext, LocalLambda, work_of
from .on_lambda import as_lambda, move_clocks, on_clock

__all__ = ["DEFAULT_MAX_EVENT_AGE", "RETRY_DELAYS", "Attempt", "Container", "HandlerExited", "HandlerNotLoaded",
           "LambdaContext", "LocalLambda", "ScheduleTimedOut", "as_lambda", "handler_traceback", "loopback_only",
           "move_clocks", "on_clock", "schedule_deadline", "work_of"]
