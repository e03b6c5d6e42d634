"""Views for the last two chapters: what to ship (11) and the local AWS under the workbook (12).

Chapter 11 gathers each pattern into one row, every cell computed: its verdicts on the eight
rows of the scenario matrix's headline (`scenarios.headline_scenarios`), whether it hands its
key to the provider (read back from the provider after one upload), and its DynamoDB bill per
first delivery and per duplicate (`idem.local.bill.measure`). `recommend` walks the decision
diagram for what a reader needs, with reasons taken from those rows; `check_choices` checks
the chapter's exercise.

Chapter 12 runs small demonstrations of what the simulator does that AWS does for real: the
local runtime's retries and event age, moto's race without its lock, Powertools on the
virtual clock, and what moto leaves out of a notification and a table's TTL.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import json
import textwrap
import time
import types
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from ..core.clock import EPOCH, VirtualClock, iso8601
from ..core.dynamo import to_item
from ..core.patterns import HANDLERS
from ..local import atomic, bill, claims
from ..local import scenarios as sc
from ..local.boundary import FaultPlan
from ..local.race import RaceReport, race
from ..local.runtime import LocalLambda
from ..local.schedules import run_schedules
from ..local.world import LocalWorld
from . import tables
from .widgets import make_explorer, pinned

WIDTH = 96  # reasons wrap here, to fit the page
PATTERNS = ("naive", "claim_first", "robust", "keyed", "powertools")


# -- chapter 11: every pattern in one row -------------------------------------------------------
@dataclass(frozen=True)
class PatternRow:
    """One pattern, as the runs measured it."""

    pattern: str
    verdicts: dict[str, str]  # headline row label -> verdict
    key_to_provider: bool  # did its charge carry an idempotency key?
    first: bill.Bill  # the first delivery of an upload
    duplicate: bill.Bill  # the same event delivered again, after the first finished

    def count(self, verdict: str) -> int:
        return sum(1 for v in self.verdicts.values() if v == verdict)

    @property
    def rows(self) -> int:
        return len(self.verdicts)

    def cells(self) -> dict[str, Any]:
        return {
            "double charge": _rows_with(self.count("double_charge"), self.rows),
            "silent loss": _rows_with(self.count("silent_loss"), self.rows),
            "silent mismatch": _rows_with(self.count("silent_mismatch"), self.rows),
            "key to provider": "yes" if self.key_to_provider else "no",
            "first delivery": cost(self.first),
            "duplicate": cost(self.duplicate),
            "$ per 1M uploads": self.first.dollars_per_million,
        }


def _rows_with(n: int, of: int) -> str:
    return f"{n} of {of}" if n else "no"


def _in_rows(what: str, n: int, of: int) -> str:
    """`no double charge in its 8 rows`, or `double charge in 3 of 8 rows`."""
    return f"{what} in {n} of {of} rows" if n else f"no {what} in its {of} rows"


def units(one: bill.Bill) -> str:
    """Request units as `3 W + 1 R` (write units, read units); `0 W` when there are none."""
    parts = [f"{value:g} {letter}" for value, letter in ((one.wru, "W"), (one.rru, "R")) if value]
    return " + ".join(parts) or "0 W"


def cost(one: bill.Bill) -> str:
    """DynamoDB calls, then request units: `2 calls, 3 W`."""
    return f"{one.calls} call{'s' if one.calls != 1 else ''}, {units(one)}"


def _label(s: sc.Scenario) -> str:
    if s.delivery != "single":
        return f"{s.fault}, {s.delivery} delivery"
    return s.fault if s.times == "-" else f"{s.fault}, {s.times}"


@contextlib.contextmanager
def _function(world: LocalWorld, handler: str) -> Iterator[tuple[dict[str, str], str]]:
    """The function's environment and entry module for `handler` in `world`."""
    if handler == sc.POWERTOOLS:
        from ..local import powertools as pt

        with pt.idempotency_table(world) as table:
            yield {**world.env(handler), "IDEMPOTENCY_TABLE": table}, pt.ENTRY
    else:
        yield world.env(handler), "idem.core.entry"


def passes_key(handler: str) -> bool:
    """Run one upload through `handler` and ask the provider: did the charge carry a key?"""
    with LocalWorld(prefix="recap") as world, _function(world, handler) as (env, entry):
        runtime = LocalLambda(world, env, entry=entry)
        runtime.send(world.event(world.upload(sc.ORDER_KEY)))
        runtime.run()
        charges = world.provider().charges()
    if not charges:
        raise RuntimeError(f"{handler} made no charge for a clean upload")
    return all(charge.idempotency_key for charge in charges)


def headline_verdicts(patterns: Iterable[str] = PATTERNS) -> dict[str, dict[str, str]]:
    """pattern -> headline row label -> verdict. The core handlers share worlds (the schedule
    runner's way, same verdicts, less time); powertools runs a world per row."""
    patterns = tuple(patterns)
    core = [s for s in sc.headline_scenarios([p for p in patterns if p in HANDLERS])]
    outcomes = [result.outcome for result in run_schedules(core, batch=len(core) or 1)]
    outcomes += [sc.run(s) for s in sc.headline_scenarios([p for p in patterns if p not in HANDLERS])]
    found: dict[str, dict[str, str]] = {p: {} for p in patterns}
    for outcome in outcomes:
        found[outcome.scenario.handler][_label(outcome.scenario)] = outcome.verdict
    return found


def pattern_rows(patterns: Iterable[str] = PATTERNS) -> list[PatternRow]:
    """Every pattern's row: the headline matrix, the key, the bill. A few seconds."""
    patterns = tuple(patterns)
    verdicts = headline_verdicts(patterns)
    return [PatternRow(p, verdicts[p], passes_key(p), bill.measure(p, "first"),
                       bill.measure(p, "duplicate")) for p in patterns]


def pattern_table(rows: Iterable[PatternRow]) -> pd.DataFrame:
    """One row per pattern: what can go wrong (matrix rows out of the headline's eight), and
    what one upload costs on DynamoDB (calls, request units, dollars per million first deliveries)."""
    frame = pd.DataFrame({row.pattern: row.cells() for row in rows}).T
    frame.index.name = "pattern"
    return frame


def _by_name(rows: Iterable[PatternRow]) -> dict[str, PatternRow]:
    return {row.pattern: row for row in rows}


# -- chapter 11: which pattern do you need? -----------------------------------------------------
EFFECTS = ("an overwrite", "a write to your own table", "a charge, provider takes keys",
           "a charge, provider takes no keys")
LOSS = ("no", "yes, and reconciled")
COPIES = ("can overlap", "never overlap")
COST = ("matters little", "matters most")
LIBRARY = ("hand-rolled", "Powertools")


@dataclass(frozen=True)
class Recommendation:
    pattern: str  # what to build
    row: str  # the table row that measures it
    path: tuple[str, ...]  # the answers taken through the decision diagram
    reasons: tuple[str, ...]

    def text(self) -> str:
        lines = [f"Build: {self.pattern}  (its measured row: {self.row})",
                 "Path: " + " > ".join(self.path)]
        for reason in self.reasons:
            lines.append(textwrap.fill(reason, WIDTH, initial_indent="- ", subsequent_indent="  "))
        return "\n".join(lines)


def _choice(name: str, value: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; choose one of: {', '.join(options)}")
    return value


def recommend(rows: Iterable[PatternRow], effect: str = EFFECTS[2], lost_ok: str = LOSS[0],
              copies: str = COPIES[0], cost: str = COST[0], library: str = LIBRARY[0]) -> Recommendation:
    """Walk the decision diagram for what a handler needs; every reason quotes a measured row."""
    _choice("effect", effect, EFFECTS), _choice("lost_ok", lost_ok, LOSS)
    _choice("copies", copies, COPIES), _choice("cost", cost, COST), _choice("library", library, LIBRARY)
    r = _by_name(rows)
    naive, claim_first, robust, keyed = r["naive"], r["claim_first"], r["robust"], r["keyed"]
    n = keyed.rows
    saving = keyed.first.dollars_per_million - claim_first.first.dollars_per_million
    path = [f"effect: {effect}"]
    reasons: list[str] = []
    if effect == EFFECTS[0]:
        pattern, row = "an overwrite, no record", "naive"
        reasons.append("Writing the same result twice leaves the world as writing it once: the effect is "
                       "idempotent. Set a value named by the upload; never add to one.")
        reasons.append(f"naive adds to a balance, which is why its row shows a double charge in "
                       f"{naive.count('double_charge')} of {n} rows.")
    else:
        path.append(f"losing an upload acceptable: {lost_ok}")
        if lost_ok == LOSS[1]:
            path.append(f"cost: {cost}")
        if lost_ok == LOSS[1] and cost == COST[1]:
            pattern, row = "claim_first, watched by reconciliation", "claim_first"
            reasons.append(f"One conditional write, then the work: claim_first never charges twice "
                           f"({_in_rows('double charge', claim_first.count('double_charge'), n)}).")
            reasons.append(f"A failure after its claim loses work without a sound (silent loss in "
                           f"{claim_first.count('silent_loss')} of {n} rows, silent mismatch in "
                           f"{claim_first.count('silent_mismatch')}): only reconciliation finds them.")
            reasons.append(f"It saves ${saving:.2f} per million first deliveries against keyed.")
        else:
            if lost_ok == LOSS[1]:
                reasons.append(f"Losing work is allowed, but claim_first would save only ${saving:.2f} per "
                               "million first deliveries: keep the work instead.")
            pattern, row = _keep_the_work(effect, library, path, reasons, r)
        if copies == COPIES[0]:
            reasons.append(f"Copies that overlap rule out a read followed by a write: robust, which reads "
                           f"first, ends in {robust.verdicts['none, concurrent delivery']} when a copy "
                           "runs concurrently. The pattern named here claims with one conditional write.")
        else:
            reasons.append("S3 and Lambda make no such promise: a duplicate can start while the first "
                           "copy runs. The answer does not change: the claim is one conditional write.")
        path.append(f"copies {copies}")
    reasons.append("Whatever you build: reconcile on a schedule (07), and run `idem check` on it (10).")
    return Recommendation(pattern, row, tuple(path), tuple(reasons))


def _keep_the_work(effect: str, library: str, path: list[str], reasons: list[str],
                   r: Mapping[str, PatternRow]) -> tuple[str, str]:
    keyed, robust, powertools = r["keyed"], r["robust"], r["powertools"]
    n = keyed.rows
    if effect == EFFECTS[1]:
        reasons.append("Write the effect and the done record together, in one transaction: both land, "
                       "or neither does, so no failure can leave one without the other.")
        reasons.append("keyed's commit goes further: its done record is its ledger line, one owner-fenced "
                       "write. Keep its claim and commit, and let the commit carry your effect.")
        return "one transaction: the effect and the done record", "keyed"
    if effect == EFFECTS[2]:
        path.append(f"library: {library}")
        if library == LIBRARY[1]:
            reasons.append(f"Powertools gives the claim, the in-progress expiry and the record's expiry. "
                           f"Alone it ends in double charge in {powertools.count('double_charge')} of "
                           f"{n} rows: it deletes its record when the function raises after the charge.")
            reasons.append("Pass its key to the provider from inside the idempotent function, and set "
                           "expires_after_seconds above the maximum event age.")
            return "Powertools, with its key passed to the provider", "powertools"
        double, loss = keyed.count("double_charge"), keyed.count("silent_loss")
        measured = (f"no double charge and no silent loss in its {n} rows" if not double + loss else
                    f"{_in_rows('double charge', double, n)}, {_in_rows('silent loss', loss, n)}")
        reasons.append(f"A claim with a lease, the same key to the provider, a commit fenced to the "
                       f"owner: {measured}.")
        return "keyed (the handler to copy)", "keyed"
    reasons.append("Without a key, no code of yours can tell whether a lost answer moved money: "
                   f"robust, a record with no key, ends in double charge in "
                   f"{robust.count('double_charge')} of {n} rows.")
    reasons.append("Keep keyed's claim, lease and fenced commit. Before charging again, look the "
                   "charge up by the upload; if that cannot tell, mark the record needs_attention.")
    return "keyed's claim and commit, a look-up instead of the key", "keyed"


def show_recommendation(recommendation: Recommendation) -> None:
    print(recommendation.text())


def _recommend_controls(effect: str, lost_ok: str, copies: str, cost: str,
                        library: str) -> dict[str, widgets.ValueWidget]:
    wide = {"description_width": "initial"}
    return {
        "effect": widgets.Dropdown(options=EFFECTS, value=effect, description="the effect is",
                                   style=wide),
        "lost_ok": widgets.ToggleButtons(options=LOSS, value=lost_ok, description="lose an upload?",
                                         style=wide),
        "copies": widgets.ToggleButtons(options=COPIES, value=copies, description="copies",
                                        style=wide),
        "cost": widgets.ToggleButtons(options=COST, value=cost, description="cost", style=wide),
        "library": widgets.ToggleButtons(options=LIBRARY, value=library, description="code",
                                         style=wide),
    }


def recommend_explorer(rows: list[PatternRow], effect: str = EFFECTS[2], lost_ok: str = LOSS[0],
                       copies: str = COPIES[0], cost: str = COST[0],
                       library: str = LIBRARY[0]) -> widgets.Widget:
    """Say what the handler needs; see the pattern the decision diagram gives, and why."""
    return make_explorer(
        _recommend_controls(effect, lost_ok, copies, cost, library),
        functools.partial(recommend, rows), show_recommendation,
        links={"cost": lambda v: {"disabled": v["effect"] == EFFECTS[0] or v["lost_ok"] == LOSS[0]},
               "library": lambda v: {"disabled": v["effect"] != EFFECTS[2]},
               "lost_ok": lambda v: {"disabled": v["effect"] == EFFECTS[0]},
               "copies": lambda v: {"disabled": v["effect"] == EFFECTS[0]}})


recommend_explore = pinned(recommend, show_recommendation,
                           "Recommend a pattern and say why (the explorer's twin).")


# -- chapter 11: the exercise --------------------------------------------------------------------
SYSTEMS = {
    "thumbnail": "write a thumbnail of the upload to thumbs/<the same key>.jpg",
    "card": "charge the customer's card through a provider that takes idempotency keys",
    "balance": "add the order's total to the customer's balance, an item in your own table",
    "chat": "post 'thanks for your order' to a chat API without idempotency keys; a missed post "
            "is fine (a weekly job re-posts what is missing), two posts look sloppy",
}
CHOICES = ("overwrite", "claim_first", "transaction", "keyed")
ANSWERS = {"thumbnail": "overwrite", "card": "keyed", "balance": "transaction", "chat": "claim_first"}


def _why(system: str, choice: str, r: Mapping[str, PatternRow]) -> tuple[str, str]:
    """(verdict, why): verdict is `right`, `more than needed` or `wrong`."""
    naive, claim_first, robust, keyed = r["naive"], r["claim_first"], r["robust"], r["keyed"]
    n = keyed.rows
    lost = f"claim_first ends in silent loss in {claim_first.count('silent_loss')} of {n} rows"
    outside = "it happens outside DynamoDB, and no DynamoDB transaction can include it"
    table = {
        ("thumbnail", "overwrite"): ("right", "the same file written twice is the same file: no record needed."),
        ("thumbnail", "claim_first"): ("wrong", f"a failure after the claim leaves no thumbnail for good ({lost}); "
                                                "writing the file again was harmless all along."),
        ("thumbnail", "transaction"): ("wrong", f"the thumbnail is a file in S3: {outside}."),
        ("thumbnail", "keyed"): ("more than needed", f"safe, but it pays {keyed.first.calls} DynamoDB calls "
                                                     f"and ${keyed.first.dollars_per_million:.2f} per million "
                                                     "uploads to guard a write that is harmless to repeat."),
        ("card", "overwrite"): ("wrong", f"a second charge is a second charge, not the same one: naive, "
                                         f"with no guard, double charges in {naive.count('double_charge')} "
                                         f"of {n} rows."),
        ("card", "claim_first"): ("wrong", f"{lost} and silent mismatch in "
                                           f"{claim_first.count('silent_mismatch')}: a customer is "
                                           "never charged, or charged with nothing in the books."),
        ("card", "transaction"): ("wrong", f"the charge moves money at the provider: {outside}. Only the "
                                           "provider's key makes a retried charge the same charge."),
        ("card", "keyed"): ("right", "the claim keeps copies apart, the key makes the provider replay, "
                                     "and the fenced commit books the charge once."),
        ("balance", "overwrite"): ("wrong", "adding to a balance is the opposite of an overwrite: every "
                                            "repeat adds again."),
        ("balance", "claim_first"): ("wrong", f"a failure between the claim and the update loses the update "
                                              f"without a sound ({lost})."),
        ("balance", "transaction"): ("right", "the done record (written only if absent) and the balance "
                                              "change land together or not at all, in one call."),
        ("balance", "keyed"): ("more than needed", "safe: its commit writes the done record and the booking "
                                                   "as one item. But its lease and provider key guard a "
                                                   "call outside your table, and here there is none."),
        ("chat", "overwrite"): ("wrong", "each post adds a message to the channel: posting again is a "
                                         "second message."),
        ("chat", "claim_first"): ("right", "it never posts twice, and the weekly job re-posts what a "
                                           "failure lost."),
        ("chat", "transaction"): ("wrong", f"the post goes to the chat API: {outside}."),
        ("chat", "keyed"): ("wrong", f"keyed leans on the provider's key, and this API has none: a retry "
                                     f"after a lost answer posts again (robust, a record without a key, "
                                     f"double charges in {robust.count('double_charge')} of {n} rows)."),
    }
    return table[(system, choice)]


def check_choices(choices: Mapping[str, str], rows: Iterable[PatternRow]) -> str:
    """The exercise's check: each system's choice, right or not, and why."""
    unknown = sorted(set(choices) - set(SYSTEMS))
    if unknown:
        return f"unknown systems {unknown}: answer for {', '.join(SYSTEMS)}"
    r = _by_name(rows)
    lines, right = [], 0
    for system in SYSTEMS:
        choice = choices.get(system, "")
        if choice not in CHOICES:
            lines.append(f"{system}: choose one of {', '.join(CHOICES)} (got {choice!r})")
            continue
        verdict, why = _why(system, choice, r)
        right += verdict == "right"
        lines.append(textwrap.fill(f"{system} -> {choice}: {verdict}. {why[0].upper()}{why[1:]}", WIDTH,
                                   subsequent_indent="  "))
    lines.append("All four right." if right == len(SYSTEMS) else
                 f"{right} of {len(SYSTEMS)} right: the decision diagram's first question is the one to ask again.")
    return "\n".join(lines)


# -- chapter 12: the local runtime ---------------------------------------------------------------
RUNTIME_HANDLER = "keyed"
CONTAINERS = ("warm", "cold")


def run_runtime(retries: int = 2, times: str = "always", how: str = "exception",
                containers: str = "warm") -> sc.Outcome:
    """One upload whose function fails before its charge (`at_charge`), through the local runtime."""
    _choice("containers", containers, CONTAINERS)
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
    """The chapter 12 exercise: attempts and the failure queue's condition, predicted."""
    run = event_age_run(max_event_age)
    starts = ", ".join(f"{s:g}" for s in run.starts)
    lines = []
    if my_attempts == run.attempts:
        lines.append(f"Attempts: right, {run.attempts} (at t = {starts} s).")
    elif my_attempts > run.attempts:
        lines.append(f"Attempts: {my_attempts} is too many. The retry after the second failure is due "
                     f"120 s after it, when the event is older than {max_event_age} s: `run` checks the "
                     "age before it invokes, and drops the event instead.")
    else:
        lines.append(f"Attempts: {my_attempts} is too few. The first retry comes 60 s after the first "
                     f"failure, when the event is 60 s old, younger than {max_event_age} s: it runs.")
    if my_condition == run.condition:
        lines.append(f"Condition: right, {run.condition}.")
    else:
        lines.append(f"Condition: not {my_condition!r}. The retries were not used up; the event ran out "
                     "of age first, and the record that reaches the failure queue says so.")
    return "\n".join(textwrap.fill(line, WIDTH) for line in lines)


# -- chapter 12: moto's race, with and without the lock -------------------------------------------
def lock_races(threads: int = 8, rounds: int = 10, window: float = 0.002) -> tuple[RaceReport, RaceReport]:
    """The conditional put raced on real threads with moto's read-check-write gap widened by
    `window` seconds: against moto as shipped, then with idem's lock. The first varies."""
    unlocked = claims.moto_as_shipped_race(threads, rounds, window)
    with atomic.widened_condition_window(window):
        locked = race(threads, rounds, "conditional_put")
    return unlocked, locked


LOCK_COLOURS = {"moto as shipped (no lock)": "#c62828", "with idem's lock": "#2e7d32"}


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


# -- chapter 12: Powertools on the virtual clock --------------------------------------------------
POWERTOOLS_BASE = "aws_lambda_powertools.utilities.idempotency.persistence.base"


def powertools_reads(clock: VirtualClock) -> dict[str, Any]:
    """What Powertools' own `dt.datetime.now()` returns, inside the shim and outside it."""
    from ..local.powertools_entry import powertools_time

    base = importlib.import_module(POWERTOOLS_BASE)
    outside = base.dt.datetime.now().timestamp()
    with powertools_time(clock):
        inside = base.dt.datetime.now().timestamp()
    return {"inside the shim": iso8601(inside), "virtual clock": iso8601(clock.now()),
            "outside, the wall clock": abs(outside - time.time()) < 60}


# -- chapter 12: what moto leaves out --------------------------------------------------------------
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
