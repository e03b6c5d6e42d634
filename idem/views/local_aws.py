"""Views for chapter 13, the appendix on the local AWS: small demonstrations of what the
simulator does that AWS does for real. The local runtime's retries and event age, moto's race
without its lock, Powertools on the virtual clock, and what moto leaves out of a notification
and a table's TTL.
"""
from __future__ import annotations

import importlib
import json
import textwrap
import time
import types
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from ..core.clock import EPOCH, VirtualClock, iso8601
from ..core.dynamo import to_item
from ..sim import atomic
from ..lessons.scribes import claims
from ..lessons.answers import not_yet, unfilled
from ..explore import scenarios as sc
from ..sim.faults import FaultPlan
from ..explore.race import RaceReport, race
from ..sim.runtime import LocalLambda
from ..sim.world import LocalWorld
from ..console import one_of
from . import tables
from .widgets import make_explorer, pinned
from ..sim.powertools_entry import powertools_time

WIDTH = 96  # reasons wrap here, to fit the page


# -- chapter 13: the local runtime ---------------------------------------------------------------
RUNTIME_HANDLER = "keyed"
CONTAINERS = ("warm", "cold")


def run_runtime(retries: int = 2, times: str = "always", how: str = "exception",
                containers: str = "warm") -> sc.Outcome:
    """One upload whose function fails before its charge (`at_charge`), through the local runtime."""
    one_of("containers", containers, CONTAINERS)
    return sc.run(sc.Scenario(RUNTIME_HANDLER, "at_charge", times, how=how, retries=retries,
                              reuse_containers=containers == "warm"))


def where_it_ended(outcome: sc.Outcome) -> str:
    """The event's fate: finished, or in the failure queue (and why Lambda sent it there)."""
    if not outcome.failures:
        return f"finished after {outcome.attempts} attempt(s); the failure queue is empty"
    context = outcome.failures[0]["requestContext"]
    return (f"in the failure queue: condition {context['condition']}, "
            f"approximateInvokeCount {context['approximateInvokeCount']}")


def show_runtime(outcome: sc.Outcome) -> None:
    display(tables.attempts_frame(outcome)[["t (s)", "attempt", "container", "outcome", "result"]])
    print(where_it_ended(outcome))


runtime_explore = pinned(run_runtime, show_runtime,
                         "Run one failing upload through the local runtime (the explorer's twin).")


def runtime_explorer(retries: int = 2, times: str = "always", how: str = "exception",
                     containers: str = "warm") -> widgets.Widget:
    """MaximumRetryAttempts, how often the function fails, how, and container reuse."""
    return make_explorer(
        {"retries": widgets.IntSlider(value=retries, min=0, max=2, description="retries"),
         "times": widgets.ToggleButtons(options=("once", "always"), value=times, description="fails"),
         "how": widgets.ToggleButtons(options=("exception", "crash"), value=how, description="how"),
         "containers": widgets.ToggleButtons(options=CONTAINERS, value=containers,
                                             description="containers")},
        run_runtime, show_runtime, rows=[["retries", "times"], ["how", "containers"]])


@dataclass(frozen=True)
class AgeRun:
    max_event_age: int
    attempts: int
    starts: tuple[float, ...]
    condition: str  # the failure queue record's condition, or "" when nothing reached it


def event_age_run(max_event_age: int) -> AgeRun:
    """An upload whose function fails every time, with MaximumEventAgeInSeconds set."""
    with LocalWorld(prefix="age") as world:
        runtime = LocalLambda(world, world.env(RUNTIME_HANDLER), max_event_age=max_event_age,
                              fault=FaultPlan.at_point("at_charge", "always"))
        runtime.send(world.event(world.upload(sc.ORDER_KEY)))
        attempts = runtime.run()
        failures = world.failure_queue()
    condition = failures[0]["requestContext"]["condition"] if failures else ""
    return AgeRun(max_event_age, len(attempts), tuple(a.start for a in attempts), condition)


def check_event_age(my_attempts: int, my_condition: str, max_event_age: int = 120) -> str:
    """The chapter 13 exercise: attempts and the failure queue's condition, predicted."""
    if unfilled(my_attempts) or unfilled(my_condition):
        return textwrap.fill(not_yet("set my_attempts (a whole number) and my_condition (the condition's "
                                     "name, a string), run their cell, then run this one"), WIDTH)
    if isinstance(my_attempts, bool) or not isinstance(my_attempts, int):
        return f"{my_attempts!r} is not a number of attempts: write a whole number."
    run = event_age_run(max_event_age)
    starts = ", ".join(f"{s:g}" for s in run.starts)
    lines = []
    # a wrong prediction gets a question that narrows, never the count or the rule (issue 43)
    if my_attempts == run.attempts:
        lines.append(f"Attempts: right, {run.attempts} (at t = {starts} s).")
    elif my_attempts > run.attempts:
        lines.append(f"Attempts: {my_attempts} is too many. How old is the event when each retry is "
                     "due, and what does `run` do before it invokes?")
    else:
        lines.append(f"Attempts: {my_attempts} is too few. How old is the event when the first retry "
                     "is due?")
    if my_condition == run.condition:
        lines.append(f"Condition: right, {run.condition}.")
    else:
        lines.append(f"Condition: not {my_condition!r}. Which limit stopped this event: its retries, "
                     "or another one? The record's condition names it.")
    return "\n".join(textwrap.fill(line, WIDTH) for line in lines)


# -- chapter 13: moto's race, with and without the lock -------------------------------------------
def lock_races(threads: int = 8, rounds: int = 10, window: float = 0.002) -> tuple[RaceReport, RaceReport]:
    """The conditional put raced on real threads with moto's read-check-write gap widened by
    `window` seconds: against moto as shipped, then with idem's lock. The first varies."""
    unlocked = claims.moto_as_shipped_race(threads, rounds, window)
    with atomic.widened_condition_window(window):
        locked = race(threads, rounds, "conditional_put")
    return unlocked, locked


LOCK_COLOURS = {"moto without the lock, gap widened": "#c62828", "with idem's lock, gap widened": "#2e7d32"}


def lock_chart(unlocked: RaceReport, locked: RaceReport) -> Any:
    """Winners per round, without and with the lock, one line each, and the line that is right."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for (label, colour), report in zip(LOCK_COLOURS.items(), (unlocked, locked)):
        won = report.winners_per_round
        ax.plot(range(1, len(won) + 1), won, marker="o", lw=2, color=colour,
                label=f"{label}: {sum(won)} wins in {report.rounds} rounds")
    ax.axhline(1, color="#333", ls=":", lw=1, label="one winner per round: what DynamoDB guarantees")
    ax.set_ylim(-0.3, unlocked.threads * 1.7 + 1)  # room above the lines for the legend
    ax.set_xlabel("round (a fresh key each round)")
    ax.set_ylabel("conditional puts that won")
    ax.legend(loc="upper right", fontsize=8)
    _ = ax.set_title(f"{unlocked.threads} threads, one conditional put each, on moto", fontsize=10)
    fig.tight_layout()
    return fig


# -- chapter 13: Powertools on the virtual clock --------------------------------------------------
POWERTOOLS_BASE = "aws_lambda_powertools.utilities.idempotency.persistence.base"


def powertools_reads(clock: VirtualClock) -> dict[str, Any]:
    """What Powertools' own `dt.datetime.now()` returns, inside the shim and outside it."""
    base = importlib.import_module(POWERTOOLS_BASE)
    outside = base.dt.datetime.now().timestamp()
    with powertools_time(clock):
        inside = base.dt.datetime.now().timestamp()
    return {"inside the shim": iso8601(inside), "virtual clock": iso8601(clock.now()),
            "outside, it reads the wall clock": abs(outside - time.time()) < 60}


# -- chapter 13: what moto leaves out --------------------------------------------------------------
def probe_moto() -> dict[str, Any]:
    """Ask moto, now: which fields its own S3 notification gives an object, and whether an
    item whose TTL passed in 1970 can still be read."""
    with LocalWorld(prefix="probe") as world:
        queue = world.sqs.create_queue(QueueName=f"{world.prefix}-notes")["QueueUrl"]
        try:
            arn = world.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
            world.s3.put_bucket_notification_configuration(Bucket=world.bucket, NotificationConfiguration={
                "QueueConfigurations": [{"QueueArn": arn["Attributes"]["QueueArn"],
                                         "Events": ["s3:ObjectCreated:*"]}]})
            put = world.s3.put_object(Bucket=world.bucket, Key=sc.ORDER_KEY, Body=b"order")
            bodies = [json.loads(m["Body"]) for m in world.sqs.receive_message(
                QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]]
        finally:
            world.sqs.delete_queue(QueueUrl=queue)
        record = next(b["Records"][0] for b in bodies if "Records" in b)
        key = to_item({"pk": "expired#1970"})
        world.dynamodb.put_item(TableName=world.ledger_table,
                                Item={**key, **to_item({"expires_at": 1})})
        found = "Item" in world.dynamodb.get_item(TableName=world.ledger_table, Key=key)
        ttl = world.dynamodb.describe_time_to_live(TableName=world.ledger_table)
    return {"object fields": sorted(record["s3"]["object"]),
            "put_object returned a versionId": "VersionId" in put,
            "test event first": any(b.get("Event") == "s3:TestEvent" for b in bodies),
            "TTL": ttl["TimeToLiveDescription"]["TimeToLiveStatus"],
            "expired item still read": found}


def virtual_time(seconds_since_epoch: float) -> str:
    """Epoch seconds as seconds on the virtual clock: `t=60`."""
    return f"t={seconds_since_epoch - EPOCH:g}"


def crossings_frame(outcome: sc.Outcome) -> pd.DataFrame:
    """Every boundary each invocation of a run crossed, in order, and what was injected there."""
    return tables.schedule_frame(types.SimpleNamespace(attempts=outcome.trace))
