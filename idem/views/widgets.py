"""Explorers (ipywidgets): controls, and a run re-shown below them whenever a control changes.

Every explorer is built by `make_explorer`, and each has a pinned twin, `explore_...`, that
makes the same run with the widget's starting values and shows it the same way. A chapter
shows the widget (its output is not stored) and then the twin (its output is).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display

from ..core.keys import RECIPES
from ..local import expiry, key_stories, leases
from ..local import race
from ..local import scenarios as sc
from . import charts, tables

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


def show_scenario(outcome: sc.Outcome) -> None:
    """A scenario's outcome row and its timeline."""
    display(tables.outcome_frame([outcome]).set_index("handler"))
    display(charts.timeline(outcome))
    _close_figures()


def explore(handler: str = "naive", fault: str = "after_charge", times: str = "once",
            delivery: str = "single") -> sc.Outcome:
    """Run one scenario and show its outcome row and its timeline (the explorer's twin)."""
    outcome = run_scenario(handler, fault, times, delivery)
    show_scenario(outcome)
    return outcome


def explorer(handler: str = "naive", fault: str = "after_charge", times: str = "once",
             delivery: str = "single") -> widgets.Widget:
    """Pick a handler, a fault point, how often it fails and how S3 delivers: see what happens."""
    return make_explorer(
        {"handler": widgets.Dropdown(options=sc.handler_names(), value=handler, description="handler"),
         "fault": widgets.Dropdown(options=FAULTS, value=fault, description="fault"),
         "times": widgets.ToggleButtons(options=("once", "always"),
                                        value=times if times != "-" else "once", description="times"),
         "delivery": widgets.ToggleButtons(options=sc.DELIVERIES, value=delivery, description="delivery")},
        run_scenario, show_scenario, rows=[("handler", "fault")],
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


def race_explore(threads: int = 8, rounds: int = 50) -> list[race.RaceReport]:
    """Race real threads with both claim strategies; print the tallies and draw them."""
    reports = run_race(threads, rounds)
    show_race(reports)
    return reports


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
    print(f"{run.story.title} ({run.story.note}), recipe {run.recipe}"
          f"{'' if run.story.versioned else ', bucket NOT versioned'}: {run.summary()}")
    display(tables.Styled(tables.rows_frame(run.rows).style.set_uuid("story").hide(axis="index")
                          .format({"t": "{:g}"}).map(
        lambda v: "" if v == "ok" else "background-color: #f6c6c3; color: black", subset=["verdict"])))


def story_explore(story: str = "same bytes again", recipe: str = "version") -> key_stories.StoryRun:
    """Run one upload story through one key recipe: every arrival, its key, and the verdict."""
    run = key_stories.run_story(story, recipe)
    show_story(run)
    return run


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
    """Several scenarios' outcome rows, and their timelines one above the other."""
    display(tables.outcome_frame(outcomes).set_index("handler"))
    display(charts.timelines(outcomes))
    _close_figures()


def explore_fault(fault: str = "at_charge", times: str = "once",
                  handlers: tuple[str, ...] = ("naive", "claim_first", "robust")) -> list[sc.Outcome]:
    """The same fault for every handler: their outcome rows, and their timelines."""
    outcomes = run_fault(fault, times, handlers)
    show_outcomes(outcomes)
    return outcomes


def fault_explorer(fault: str = "at_charge", times: str = "once") -> widgets.Widget:
    """Pick one fault point and how often it fires: every handler meets the same fault."""
    return make_explorer(
        {"fault": widgets.Dropdown(options=FAULTS, value=fault, description="fault"),
         "times": widgets.ToggleButtons(options=sc.TIMES, value=times, description="times")},
        run_fault, show_outcomes)


# -- chapters 05-07: concurrent copies, zombies, leases, late duplicates --------------------
def _summary(outcome: sc.Outcome, what: str) -> None:
    print(f"{outcome.scenario.handler}, {what}: {outcome.charges} charge(s), ledger {outcome.ledger}, "
          f"record {outcome.record}, failure queue {outcome.dlq} -> {outcome.verdict}")


def show_copy(outcome: sc.Outcome) -> None:
    _summary(outcome, f"copy arriving at {outcome.scenario.concurrent_at}")
    display(tables.invocations_frame(outcome))
    display(charts.timeline(outcome))
    _close_figures()


def explore_copy(handler: str = "robust", step: str = "before_charge") -> sc.Outcome:
    """One upload, and a copy of its event that runs when the first invocation reaches `step`."""
    outcome = leases.copy_at(handler, step)
    show_copy(outcome)
    return outcome


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


def explore_zombie(handler: str = "keyed", pause: float = 45.0) -> sc.Outcome:
    """The first invocation charges, stalls `pause` s, then commits; a copy arrives at the stall's end."""
    run = run_zombie(handler, pause)
    show_zombie(run)
    return run[0]


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


def explore_late_duplicate(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200,
                           swept: bool = False) -> expiry.LateRun:
    """One upload, and the same event again `delay` seconds later, against RECORD_TTL_SECONDS."""
    run = expiry.late_duplicate(handler, ttl_seconds, delay, swept)
    show_late_duplicate(run)
    return run


def late_duplicate_explorer(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200,
                            swept: bool = False) -> widgets.Widget:
    """Pick the record's TTL, when the late copy arrives, and whether DynamoDB had swept yet."""
    return make_explorer(
        {"handler": widgets.ToggleButtons(options=("robust", "keyed"), value=handler, description="handler"),
         "ttl_seconds": widgets.Dropdown(options=charts.TTL_CHOICES, value=ttl_seconds,
                                         description="record TTL"),
         "delay": widgets.SelectionSlider(options=charts.DELAY_CHOICES, value=delay, description="copy after"),
         "swept": widgets.Checkbox(value=swept, description="TTL sweep ran before the copy")},
        expiry.late_duplicate, show_late_duplicate)

