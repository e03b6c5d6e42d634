"""Explorers (ipywidgets): controls, and a run re-shown below them whenever a control changes.

Every explorer is `make_explorer(controls, run, show)`: the widget shows `show(run(**values))`.
Its twin, `explore_...`, is `pinned(run, show)`: the same run and the same showing, called with
the widget's starting values. A chapter shows the widget (nbval ignores its output) and then
the twin (whose output is stored and compared).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from ..explore.check import check_handler
from ..explore.errors import CheckInputError
from ..explore.target.target import resolve
from ..core.keys import RECIPES
from ..lessons.auditing import expiry
from ..lessons.scribes import key_stories, leases
from ..explore import race
from ..explore import scenarios as sc
from . import charts, tables
from ..console import fold_report

#: A linked-control rule: from every control's current value, the attributes to set on one
#: control (for example `{"disabled": True}`) before the run.
Link = Callable[[dict[str, Any]], dict[str, Any]]


def make_explorer(controls: Mapping[str, widgets.ValueWidget], run: Callable[..., Any],
                  show: Callable[[Any], None], *, rows: Sequence[Sequence[str]] = (),
                  links: Mapping[str, Link] | None = None) -> widgets.VBox:
    """The controls, then `show(run(**their values))` below them, re-run on every change.

    `rows` groups controls by name: a row of two or more sits side by side; controls not
    named in a row get a row of their own, in order. `links` maps a control's name to a
    rule that sets its attributes from the current values (a control that does not apply
    is disabled, a range follows another choice); rules run before each run, and the
    changes they make do not start another run.
    """
    links = dict(links or {})
    shown = widgets.Output()
    linking = False

    def values() -> dict[str, Any]:
        return {name: control.value for name, control in controls.items()}

    def refresh(_: Any = None) -> None:
        nonlocal linking
        if linking:
            return
        linking = True
        try:
            for name, rule in links.items():
                for attribute, value in rule(values()).items():
                    if getattr(controls[name], attribute) != value:
                        setattr(controls[name], attribute, value)
        finally:
            linking = False
        shown.clear_output(wait=True)
        with shown:
            show(run(**values()))

    for control in controls.values():
        control.observe(refresh, names="value")
    refresh()
    return widgets.VBox([*_layout(controls, rows), shown])


def pinned(run: Callable[..., Any], show: Callable[[Any], None], doc: str) -> Callable[..., Any]:
    """An explorer's twin: `show(run(...))` for the arguments given, returning what `run` returned.

    A chapter calls it with the widget's starting values, so the page reads the same where
    widgets do not render (and nbval has an output to compare).
    """
    @functools.wraps(run)
    def twin(*args: Any, **kwargs: Any) -> Any:
        result = run(*args, **kwargs)
        show(result)
        return result

    twin.__doc__ = doc
    return twin


def _layout(controls: Mapping[str, widgets.Widget], rows: Sequence[Sequence[str]]) -> list[widgets.Widget]:
    placed = {name for row in rows for name in row}
    laid: list[widgets.Widget] = []
    for name, control in controls.items():
        row = next((r for r in rows if name in r), None)
        if row is None:
            laid.append(control)
        elif row[0] == name:
            laid.append(widgets.HBox([controls[n] for n in row]) if len(row) > 1 else control)
    unknown = placed - set(controls)
    if unknown:
        raise ValueError(f"rows name controls that do not exist: {', '.join(sorted(unknown))}")
    return laid


def _close_figures() -> None:
    plt.close("all")


# -- chapter 01: one scenario -----------------------------------------------------------------
FAULTS = ("none", "at_charge", "after_charge", "after_commit")


def run_scenario(handler: str = "naive", fault: str = "after_charge", times: str = "once",
                 delivery: str = "single") -> sc.Outcome:
    """One scenario; `times` is ignored (`-`) when there is no fault."""
    if fault == "none":
        times = "-"
    elif times == "-":
        times = "once"
    return sc.run(sc.Scenario(handler, fault, times, delivery))


#: What a scenario's row shows beside its timeline (whose title names the scenario itself).
SCENARIO_COLUMNS = ("charges", "ledger_charges", "invocations", "in_failure_queue", "record_status",
                    "dynamodb_calls", "verdict")


def show_scenario(outcome: sc.Outcome) -> None:
    """A scenario's outcome row and its timeline."""
    display(tables.outcome_frame([outcome]).set_index("handler")[list(SCENARIO_COLUMNS)])
    display(charts.timeline(outcome))
    _close_figures()


explore = pinned(run_scenario, show_scenario,
                 "Run one scenario and show its outcome row and its timeline (the explorer's twin).")


def explorer(handler: str = "naive", fault: str = "after_charge", times: str = "once",
             delivery: str = "single", show: Callable[[sc.Outcome], None] | None = None) -> widgets.Widget:
    """Pick a handler, a fault point, how often it fails and how S3 delivers: see what happens
    (`show` draws each run: its row and its timeline by default)."""
    return make_explorer(
        {"handler": widgets.Dropdown(options=sc.handler_names(), value=handler, description="handler"),
         "fault": widgets.Dropdown(options=FAULTS, value=fault, description="fault"),
         "times": widgets.ToggleButtons(options=("once", "always"),
                                        value=times if times != "-" else "once", description="times"),
         "delivery": widgets.ToggleButtons(options=sc.DELIVERIES, value=delivery, description="delivery")},
        run_scenario, show or show_scenario, rows=[("handler", "fault")],
        links={"times": lambda v: {"disabled": v["fault"] == "none"}})


# -- chapters 02-04: races for a claim, upload stories, one fault for every handler ---------
def run_race(threads: int = 8, rounds: int = 50) -> list[race.RaceReport]:
    """Race real threads with both claim strategies."""
    return [race.race(threads, rounds, strategy) for strategy in ("read_then_write", "conditional_put")]


def show_race(reports: list[race.RaceReport]) -> None:
    for report in reports:
        print(report.summary())
    display(charts.race_chart(reports))
    _close_figures()


race_explore = pinned(run_race, show_race,
                      "Race real threads with both claim strategies; print the tallies and draw them.")


def race_explorer(threads: int = 8, rounds: int = 50) -> widgets.Widget:
    """Pick how many threads race and for how many rounds."""
    return make_explorer(
        {"threads": widgets.IntSlider(value=threads, min=2, max=16, description="threads",
                                      continuous_update=False),
         "rounds": widgets.IntSlider(value=rounds, min=10, max=100, step=10, description="rounds",
                                     continuous_update=False)},
        run_race, show_race)


def show_story(run: key_stories.StoryRun) -> None:
    """One story's arrivals, each with its key and verdict, wrong ones in red."""
    print(f"{run.story.title} ({run.story.note})\n  recipe {run.recipe}"
          f"{'' if run.story.versioned else ', bucket NOT versioned'}: {run.summary()}")
    display(tables.Styled(tables.rows_frame(run.rows).style.set_uuid("story").hide(axis="index")
                          .format({"t": "{:g}"}).map(
        lambda v: "" if v == "ok" else "background-color: #f6c6c3; color: black", subset=["verdict"])))


story_explore = pinned(key_stories.run_story, show_story,
                       "Run one upload story through one key recipe: every arrival, its key, "
                       "and the verdict.")


def story_explorer(story: str = "same bytes again", recipe: str = "version") -> widgets.Widget:
    """Pick an upload story and a key recipe: see which arrivals are charged."""
    return make_explorer(
        {"story": widgets.Dropdown(options=tuple(key_stories.STORIES), value=story, description="story"),
         "recipe": widgets.ToggleButtons(options=tuple(RECIPES), value=recipe, description="recipe")},
        key_stories.run_story, show_story)


def run_fault(fault: str = "at_charge", times: str = "once",
              handlers: tuple[str, ...] = ("naive", "claim_first", "robust")) -> list[sc.Outcome]:
    """The same fault for every handler."""
    return [sc.run(sc.Scenario(h, fault, "-" if fault == "none" else times)) for h in handlers]


def show_outcomes(outcomes: list[sc.Outcome]) -> None:
    """Several scenarios' outcome rows (what differs between handlers: the scenario is the same
    for all), and their timelines one above the other."""
    display(tables.outcome_frame(outcomes).set_index("handler")[
        ["charges", "ledger_charges", "invocations", "in_failure_queue", "record_status", "verdict"]])
    display(charts.timelines(outcomes))
    _close_figures()


explore_fault = pinned(run_fault, show_outcomes,
                       "The same fault for every handler: their outcome rows, and their timelines.")


def fault_explorer(fault: str = "at_charge", times: str = "once") -> widgets.Widget:
    """Pick one fault point and how often it fires: every handler meets the same fault."""
    return make_explorer(
        {"fault": widgets.Dropdown(options=FAULTS, value=fault, description="fault"),
         "times": widgets.ToggleButtons(options=sc.TIMES, value=times, description="times")},
        run_fault, show_outcomes)


# -- chapters 05-07: concurrent copies, zombies, leases, late duplicates --------------------
def _summary(outcome: sc.Outcome, what: str) -> None:
    """One line of what a run did; the facts go on an indented second line when it would pass
    the page's 100 characters."""
    head = f"{outcome.scenario.handler}, {what}:"
    facts = (f"{outcome.charges} charge(s), ledger {outcome.ledger}, record {outcome.record}, "
             f"failure queue {outcome.dlq} -> {outcome.verdict}")
    print(f"{head} {facts}" if len(head) + 1 + len(facts) <= 100 else f"{head}\n    {facts}")


def show_copy(outcome: sc.Outcome) -> None:
    _summary(outcome, f"copy arriving at {outcome.scenario.concurrent_at}")
    display(tables.invocations_frame(outcome))
    display(charts.timeline(outcome))
    _close_figures()


explore_copy = pinned(leases.copy_at, show_copy,
                      "One upload, and a copy of its event that runs when the first invocation "
                      "reaches `step`.")


def copy_explorer(handler: str = "robust", step: str = "before_charge") -> widgets.Widget:
    """Pick a handler and the step at which a concurrent copy of the event arrives."""
    return make_explorer(
        {"handler": widgets.ToggleButtons(options=tuple(sc.HANDLERS), value=handler, description="handler"),
         "step": widgets.ToggleButtons(options=leases.STEPS, value=step, description="copy at")},
        leases.copy_at, show_copy)


def run_zombie(handler: str = "keyed", pause: float = 45.0) -> tuple[sc.Outcome, float]:
    """The zombie run, and the stall it was given (its title names it)."""
    return leases.zombie(handler, pause), pause


def show_zombie(run: tuple[sc.Outcome, float]) -> None:
    outcome, pause = run
    _summary(outcome, f"stall of {pause:.0f} s after the charge")
    display(tables.invocations_frame(outcome))
    display(charts.lease_timeline(outcome, title=f"{outcome.scenario.handler}: the first invocation stalls "
                                                 f"{pause:.0f} s after the charge; a copy arrives as the "
                                                 "stall ends"))
    _close_figures()


explore_zombie = pinned(run_zombie, show_zombie,
                        "The first invocation charges, stalls `pause` s, then commits; a copy "
                        "arrives at the stall's end.")


def zombie_explorer(handler: str = "keyed", pause: float = 45.0) -> widgets.Widget:
    """Pick a handler and how long the first invocation stalls between its charge and its commit."""
    return make_explorer(
        {"handler": widgets.ToggleButtons(options=("robust", "keyed"), value=handler, description="handler"),
         "pause": widgets.IntSlider(value=int(pause), min=0, max=120, step=5, description="stall (s)")},
        run_zombie, show_zombie)


def show_late_duplicate(run: expiry.LateRun) -> None:
    display(tables.late_frame([run]))
    display(charts.record_life_chart([run]))
    _close_figures()


explore_late_duplicate = pinned(expiry.late_duplicate, show_late_duplicate,
                                "One upload, and the same event again `delay` seconds later, "
                                "against RECORD_TTL_SECONDS.")


def late_duplicate_explorer(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200,
                            swept: bool = False) -> widgets.Widget:
    """Pick the record's TTL, when the late copy arrives, and whether DynamoDB had swept yet."""
    return make_explorer(
        {"handler": widgets.ToggleButtons(options=("robust", "keyed"), value=handler, description="handler"),
         "ttl_seconds": widgets.Dropdown(options=charts.TTL_CHOICES, value=ttl_seconds,
                                         description="record TTL"),
         "delay": widgets.SelectionSlider(options=charts.DELAY_CHOICES, value=delay,
                                          description="copy after"),
         "swept": widgets.Checkbox(value=swept, description="TTL sweep ran before the copy")},
        expiry.late_duplicate, show_late_duplicate)


# -- chapter 11: a check's breaks, one schedule at a time ------------------------------------
#: What each of the workbook's patterns writes into its books, named as effects for the check.
PATTERN_BOOKS = {"naive": ("dynamodb:UpdateItem",), "claim_first": ("dynamodb:UpdateItem",),
                 "robust": ("dynamodb:UpdateItem",), "keyed": ("dynamodb:TransactWriteItems",)}
#: How many breaks, smallest first, the explorer offers to replay.
REPLAYS = 5


class HandlerChoices:
    """Handlers to pick from, by label: a check report already made, or a target (`module:function`
    of your handler, or a pattern's name) that is checked when it is first asked for.

    A handler's file is read each time: an edited file is checked again, an unchanged one (or
    one with the same code as a report already made) is not. The workbook's patterns join the
    choices, each with its books named as an effect.
    """

    def __init__(self, choices: Mapping[str, Any], *, effects: Sequence[str] = (),
                 retries: Sequence[int] = (0, 1, 2), patterns: bool = True) -> None:
        self.choices = dict(choices)
        self.effects = {label: tuple(effects) for label in self.choices}
        if patterns:
            for name, books in PATTERN_BOOKS.items():
                self.choices.setdefault(name, name)
                self.effects.setdefault(name, books)
        self.retries = tuple(sorted(set(retries)))
        self._checked: dict[tuple[Any, ...], Any] = {}
        for report in self.choices.values():
            if not isinstance(report, str):
                retried = report.retries
                self._checked[_code_key(report.target, report.effects, retried)] = report

    @property
    def labels(self) -> list[str]:
        return list(self.choices)

    def report(self, label: str) -> Any:
        """The check report for the handler labelled `label` (CheckInputError if it cannot be checked)."""
        choice = self.choices[label]
        if not isinstance(choice, str):
            return choice
        key = _code_key(resolve(choice), self.effects[label], self.retries)
        if key not in self._checked:
            print(f"checking {label}: every schedule, one after the other...", flush=True)
            self._checked[key] = check_handler(choice, effects=self.effects[label], retries=self.retries,
                                               workers=1)
        return self._checked[key]


def _code_key(target: Any, effects: Sequence[str], retries: Sequence[int]) -> tuple[Any, ...]:
    """What a check's report depends on: the handler's code (its file's content), its function
    and settings, the effects counted and the retries tried."""
    importlib.invalidate_caches()  # a module written a moment ago
    if target.module.endswith(".py"):
        path: Path | None = Path(target.module)
    else:
        spec = importlib.util.find_spec(target.module)
        path = Path(spec.origin) if spec and spec.origin else None
    code = hashlib.sha256(path.read_bytes()).hexdigest() if path and path.is_file() else target.module
    return (code, target.function, target.env, tuple(effects), tuple(retries))


def replay_options(report: Any, first: int = REPLAYS) -> tuple[tuple[str, int], ...]:
    """The breaks to replay, smallest schedule first, as (label, index) pairs."""
    if report is None or report.holds:
        return (("none: it holds", 0),) if report is not None else (("-", 0),)
    broken = sorted(report.broken, key=lambda r: r.schedule.size)[:first]
    return tuple((f"{n + 1}: {r.verdict}", n) for n, r in enumerate(broken))


@dataclasses.dataclass
class Replay:
    """One handler's check, and the break picked from it (None when the check holds)."""

    handler: str
    report: Any = None
    result: Any = None
    problem: str = ""  # why the handler could not be checked


def run_replay(choices: HandlerChoices, handler: str | None = None, schedule: int = 0) -> Replay:
    """Check `handler` (the first choice by default; a report made before is reused) and pick
    its `schedule`-th smallest break."""
    handler = handler or choices.labels[0]
    try:
        report = choices.report(handler)
    except CheckInputError as error:
        return Replay(handler, problem=str(error))
    broken = sorted(report.broken, key=lambda r: r.schedule.size)
    return Replay(handler, report, broken[min(schedule, len(broken) - 1)] if broken else None)


def show_replay(replay: Replay) -> None:
    """The handler's verdicts on one line, then the break: its schedule, a row per boundary
    crossed, the effects against the clean run, and the invocations on the clock."""
    if replay.problem:
        print(f"{replay.handler}: cannot be checked yet: {replay.problem}")
        return
    report, result = replay.report, replay.result
    tally = ", ".join(f"{verdict} {n}" for verdict, n in report.tally().items())
    print(fold_report(f"{replay.handler}, {len(report.results)} schedules: {tally}"))
    if result is None:
        print("it holds: no double effect, silent mismatch or silent loss to replay")
        return
    print(f"replaying a {result.verdict}: {result.schedule.label()}")
    display(tables.schedule_frame(result))
    counts = ", ".join(f"{name} {result.effects.get(name, 0)} (clean run {n})"
                       for name, n in report.baseline.items() if n)
    print(f"effects: {counts}; failure queue: {result.dlq}")
    display(charts.timeline(result.attempts, title=f"{replay.handler}: {result.verdict}"))
    _close_figures()


explore_check = pinned(run_replay, show_replay,
                       "Show the `schedule`-th smallest break of a handler's check (the explorer's twin).")


def check_explorer(choices: HandlerChoices, handler: str | None = None, schedule: int = 0) -> widgets.Widget:
    """Pick a handler and one of its smallest breaks: see the schedule that breaks it."""
    handler = handler or choices.labels[0]

    def breaks_of(label: str) -> tuple[tuple[str, int], ...]:
        return replay_options(run_replay(choices, label).report)

    return make_explorer(
        {"handler": widgets.Dropdown(options=choices.labels, value=handler, description="handler"),
         "schedule": widgets.Dropdown(options=breaks_of(handler), value=schedule, description="break")},
        functools.partial(run_replay, choices), show_replay,
        links={"schedule": lambda v: {"options": breaks_of(v["handler"])}})
