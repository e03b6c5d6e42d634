"""Leases under pressure: a concurrent copy at any step, a zombie whose lease runs out while it
stalls, and when each invocation held the lease (chapters 05 and 06).
"""
from __future__ import annotations

import contextlib
import io
import textwrap

from ...core.patterns import HANDLERS, HAS_DONE_STATE
from ..answers import not_yet, unfilled
from ...explore import scenarios as sc
from ...sim.faults import Step
from ...sim.runtime import LocalLambda
from ...sim.world import LocalWorld

#: The checkpoints every handler passes through, in order: where a concurrent copy can land.
STEPS = tuple(step.value for step in Step)


def known_handler(handler: str) -> None:
    if handler not in HANDLERS:
        raise ValueError(f"unknown handler {handler!r}; choose from {', '.join(HANDLERS)}")


def copy_at(handler: str = "robust", step: str = "before_charge") -> sc.Outcome:
    """One upload; a second copy of its event runs when the first invocation reaches `step`."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}; choose from {', '.join(STEPS)}")
    return sc.run(sc.Scenario(handler, delivery="concurrent", concurrent_at=step))


def zombie(handler: str = "keyed", pause: float = 45.0, timeout: float = 30.0) -> sc.Outcome:
    """The first invocation charges, then stalls for `pause` seconds; a copy of the event
    arrives at the end of the stall, and only then does the first one try to commit.

    A stall longer than the lease (which ends at the invocation's deadline, `timeout`
    seconds after it started) lets the copy take the work over: the stalled invocation
    is a zombie, and its commit must be refused.
    """
    known_handler(handler)
    if pause < 0:
        raise ValueError(f"the stall is a number of seconds, 0 or more; got {pause}")
    scenario = sc.Scenario(handler, delivery="concurrent", timeout=timeout, concurrent_at="charged")
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env(handler), timeout=timeout)
        event = world.event(world.upload(sc.ORDER_KEY))
        runtime.send(event)

        def stall_then_copy() -> None:
            world.clock.advance(pause)
            runtime.send_now(event)

        runtime.during("charged", stall_then_copy)
        runtime.run()
        return sc.read_outcome(world, runtime, scenario, handler in HAS_DONE_STATE)


def lease_windows(outcome: sc.Outcome) -> list[tuple[int, float, float]]:
    """(delivery, start, end) of each lease a keyed run took, on the virtual clock.

    An invocation that won the claim reaches the `before_charge` step; its lease runs
    to its deadline, `timeout` seconds after it started.
    """
    if outcome.scenario.handler != "keyed":
        return []  # only the keyed scribe's claim carries a lease
    timeout = outcome.scenario.timeout
    return [(a.delivery, a.start, a.start + timeout) for a in outcome.trace
            if any(step == "before_charge" for _, step in a.steps)]


def last_status(outcome: sc.Outcome, delivery: int = 1, attempt: int = 1) -> str:
    """What one invocation's handler returned for the upload (charged, duplicate, superseded)
    or, if it raised, the error's name."""
    for a in outcome.trace:
        if (a.delivery, a.attempt) == (delivery, attempt):
            processed = (a.result or {}).get("processed") or [{}]
            return processed[0].get("status") or a.error.split(":", 1)[0] or "-"
    raise ValueError(f"no invocation for delivery {delivery}, attempt {attempt} in this run")


# -- chapter 06's exercise: size a lease -----------------------------------------------------------
#: Lambda's first retry of a failed asynchronous invocation, in seconds (chapter 01).
FIRST_RETRY = 60.0


def check_lease(my_timeout: float, work: float = 45.0) -> str:
    """Run keyed with `my_timeout` as its function timeout (its lease) twice: a copy arriving
    `work` seconds into the work, and a crash after the charge. Say which rule each run broke."""
    if unfilled(my_timeout):
        return not_yet("set my_timeout to a number of seconds, from 1 to 900")
    if isinstance(my_timeout, bool) or not isinstance(my_timeout, (int, float)) or not 0 < my_timeout <= 900 \
            or my_timeout != int(my_timeout):  # whole seconds: "in increments of 1 second"
        return (f"{my_timeout!r} is not a Lambda timeout: it is a whole number of seconds from 1 to 900 "
                "(https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html).")
    with contextlib.redirect_stdout(io.StringIO()):  # keyed's log lines: the check's lines say it all
        stalled = zombie("keyed", pause=work, timeout=my_timeout)
    crashed = sc.run(sc.Scenario("keyed", "after_charge", "once", how="crash", timeout=my_timeout))
    live_kept = last_status(stalled, delivery=2) == "WorkInProgress"
    lines = []
    if not live_kept:
        lines.append(
            f"Not yet (1): the lease ended at t={my_timeout:g} s, not after the {work:g} s of work. A copy "
            f"at t={work:g} s found it over and took the work over ({last_status(stalled, delivery=2)}), "
            f"and the live invocation's commit was refused ({last_status(stalled, delivery=1)}). "
            "Lambda also stops an invocation at its timeout, so a timeout no longer than the work can "
            "cut the work short.")
    if crashed.attempts > 2 or crashed.dlq:
        lines.append(
            f"Not yet (2): the crashed invocation's lease ran to t={my_timeout:g} s, past the retry at "
            f"t={FIRST_RETRY:g} s, which met a live lease (WorkInProgress). The work waited "
            + ("for the retry at t=180 s." if not crashed.dlq else "past both retries, and the event "
               f"went to the failure queue ({crashed.verdict})."))
    if not lines:
        lines.append(
            f"Right: a copy at t={work:g} s met a live lease and waited, and after a crash the retry at "
            f"t={FIRST_RETRY:g} s took over and got the provider's replay ({crashed.charges} charge, "
            f"{crashed.verdict}).")
    return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") for line in lines)
