"""Views for the chapters: tables (pandas), pictures (matplotlib) and widgets (ipywidgets).

Kept apart from the core on purpose: nothing that ships to Lambda imports this module.
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Any, Iterable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from .core.clock import EPOCH
from .local import scenarios as sc
from .local.runtime import DEFAULT_MAX_EVENT_AGE, Attempt
from .local import batches, expiry, key_stories, leases

VERDICT_COLOURS = {
    "exactly_once": "#d8f0d2",
    "needs_attention": "#fff1c1",
    "failed_visibly": "#dce9f7",
    "double_charge": "#f6c6c3",
    "silent_mismatch": "#f3d3ea",
    "silent_loss": "#e6e0f5",
}
OUTCOME_MARKERS = {"ok": ("o", "#2e7d32"), "error": ("X", "#c62828"),
                   "crash": ("X", "#6a1b9a"), "timeout": ("X", "#ef6c00")}


def show_source(*objects: Any) -> Markdown:
    """The real source of idem functions, classes or modules, syntax-highlighted."""
    parts = [textwrap.dedent(inspect.getsource(obj)).rstrip() for obj in objects]
    return Markdown("```python\n" + "\n\n\n".join(parts) + "\n```")


def show_text(text: str, language: str = "") -> Markdown:
    """Any text (a template excerpt, a JSON message) as a highlighted block."""
    return Markdown(f"```{language}\n{text.rstrip()}\n```")


def outcome_frame(outcomes: Iterable[sc.Outcome]) -> pd.DataFrame:
    """One row per scenario, with the outcome fields."""
    return pd.DataFrame([o.row() for o in outcomes], columns=list(sc.OUTCOME_FIELDS))


def _row_label(row: dict[str, Any]) -> str:
    if row["delivery"] != "single":
        return f"{row['fault']}, {row['delivery']} delivery"
    return row["fault"] if row["times"] == "-" else f"{row['fault']}, {row['times']}"


def matrix_table(outcomes: Iterable[sc.Outcome]) -> Any:
    """Charges then verdict, one column per handler, coloured by verdict."""
    rows = [o.row() for o in outcomes]
    frame = pd.DataFrame({
        "scenario": [_row_label(r) for r in rows],
        "handler": [r["handler"] for r in rows],
        "cell": [f"{r['charges']} {r['verdict']}" for r in rows],
    })
    order = list(dict.fromkeys(frame["scenario"]))
    handlers = list(dict.fromkeys(frame["handler"]))
    table = frame.pivot(index="scenario", columns="handler", values="cell").loc[order, handlers]
    table.columns.name, table.index.name = None, "fault, times / delivery"
    return Styled(table.style.set_uuid("matrix").map(_verdict_colour))


class Styled:
    """A coloured table for JupyterLab, with the plain table as its text form.

    A pandas Styler's text form is `<Styler at 0x...>`: a memory address in the stored
    notebook. This shows the same HTML and prints the data instead.
    """

    def __init__(self, styler: Any) -> None:
        self.styler = styler

    def _repr_html_(self) -> str:
        return self.styler.to_html()

    def __repr__(self) -> str:
        return self.styler.data.to_string()


def _verdict_colour(cell: str) -> str:
    verdict = str(cell).split(" ", 1)[-1]
    return f"background-color: {VERDICT_COLOURS.get(verdict, 'white')}; color: black"


def _trace(run: sc.Outcome | Iterable[Attempt]) -> list[Attempt]:
    return list(run.trace) if isinstance(run, sc.Outcome) else list(run)


def attempts_frame(run: sc.Outcome | Iterable[Attempt]) -> pd.DataFrame:
    """Every invocation (of a scenario, or a runtime's `attempts`): when, where, what, how it ended."""
    return pd.DataFrame([{
        "t (s)": a.start, "delivery": a.delivery, "attempt": a.attempt,
        "container": f"{a.container} ({'cold' if a.cold else 'warm'})",
        "steps": " > ".join(step for _, step in a.steps) or "-",
        "outcome": a.outcome, "dynamodb_calls": a.dynamodb_calls,
        "result": a.error or _statuses(a.result),
    } for a in _trace(run)])


def _statuses(result: Any) -> str:
    """What the function returned for each record: charged, duplicate, ..."""
    if not isinstance(result, dict):
        return str(result)
    return ", ".join(p.get("status", "?") for p in result.get("processed", [])) or result.get("status", "")


#: Item attributes holding epoch seconds (Powertools' in-progress expiry: milliseconds).
TIME_ATTRIBUTES = {"created_at": 1, "expires_at": 1, "lease_until": 1, "booked_at": 1,
                   "expiration": 1, "in_progress_expiration": 1000}


def items_frame(items: Iterable[dict[str, Any]], width: int = 30) -> pd.DataFrame:
    """Items read back from a table, long keys shortened so they fit on screen.

    Times are stored as epoch seconds (what DynamoDB's TTL needs); they are shown here as
    seconds on the virtual clock, `t=600`, so they can be read against the timelines.
    """
    rows = []
    for item in items:
        row = {k: _on_the_clock(v, TIME_ATTRIBUTES[k]) if k in TIME_ATTRIBUTES else _shorten(v, width)
               for k, v in item.items()}
        rows.append(row)
    frame = pd.DataFrame(rows, dtype=object).fillna("")
    first = [c for c in ("pk", "status") if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


def _on_the_clock(value: Any, per_second: int) -> Any:
    if not isinstance(value, (int, float)) or not value:
        return value
    return f"t={value / per_second - EPOCH:g}"


def _shorten(value: Any, width: int) -> Any:
    text = value if isinstance(value, str) else None
    if text is not None and len(text) > width:
        return text[: width - 1] + "…"
    return value


def timeline(run: sc.Outcome | Iterable[Attempt], title: str | None = None, ax: Any = None) -> Any:
    """Each invocation as a point on the virtual clock, one row per delivery.

    A coin marks an attempt that moved money; red crosses are failed attempts; the last
    column says where the event ended up.
    """
    trace = _trace(run)
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 1.2 + 0.7 * max(1, len({a.delivery for a in trace}))))
    else:
        fig = ax.figure
    deliveries = sorted({a.delivery for a in trace})
    for a in trace:
        y = deliveries.index(a.delivery)
        marker, colour = OUTCOME_MARKERS[a.outcome]
        ax.scatter([a.start], [y], marker=marker, s=120, color=colour, zorder=3)
        charged = any(step == "charged" for _, step in a.steps)
        label = f"#{a.attempt} {a.container}{'*' if a.cold else ''}" + (" $" if charged else "")
        ax.annotate(label, (a.start, y), textcoords="offset points", xytext=(0, 10),
                    ha="center", fontsize=8, color="#b8860b" if charged else "#333")
    for d in deliveries:
        attempts = [a for a in trace if a.delivery == d]
        ax.plot([a.start for a in attempts], [deliveries.index(d)] * len(attempts),
                color="#999", lw=1, zorder=1)
    ax.set_yticks(range(len(deliveries)), [f"delivery {d}" for d in deliveries])
    ax.set_ylim(-0.7, len(deliveries) - 0.3)
    end = max((a.start for a in trace), default=0)
    ax.set_xlim(-10, max(60, end) + 25)
    ax.set_xlabel("virtual time (s)   # attempt, container (* cold), $ money moved")
    if title is None and isinstance(run, sc.Outcome):
        row = run.row()
        title = (f"{row['handler']}, fault {row['fault']} ({row['times']}), "
                 f"{row['delivery']} delivery: {row['charges']} charge(s), {row['verdict']}")
    _ = ax.set_title(title or "attempts on the virtual clock", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def explore(handler: str = "naive", fault: str = "after_charge", times: str = "once",
            delivery: str = "single") -> sc.Outcome:
    """Run one scenario and show its outcome row and its timeline (the explorer's twin)."""
    if fault == "none":
        times = "-"
    elif times == "-":
        times = "once"
    outcome = sc.run(sc.Scenario(handler, fault, times, delivery))
    display(outcome_frame([outcome]).set_index("handler"))
    display(timeline(outcome))
    plt.close("all")
    return outcome


def explorer(handler: str = "naive", fault: str = "after_charge", times: str = "once",
             delivery: str = "single") -> widgets.Widget:
    """Pick a handler, a fault point, how often it fails and how S3 delivers: see what happens."""
    pick_handler = widgets.Dropdown(options=sc.handler_names(), value=handler, description="handler")
    pick_fault = widgets.Dropdown(options=("none", "at_charge", "after_charge", "after_commit"),
                                  value=fault, description="fault")
    pick_times = widgets.ToggleButtons(options=("once", "always"),
                                       value=times if times != "-" else "once", description="times")
    pick_delivery = widgets.ToggleButtons(options=sc.DELIVERIES, value=delivery, description="delivery")
    shown = widgets.Output()

    def refresh(_: Any = None) -> None:
        pick_times.disabled = pick_fault.value == "none"
        shown.clear_output(wait=True)
        with shown:
            explore(pick_handler.value, pick_fault.value, pick_times.value, pick_delivery.value)

    for control in (pick_handler, pick_fault, pick_times, pick_delivery):
        control.observe(refresh, names="value")
    refresh()
    return widgets.VBox([widgets.HBox([pick_handler, pick_fault]), pick_times, pick_delivery, shown])


# -- chapters 05-07: concurrent copies, zombies, leases, late duplicates --------------------

LEASE_COLOUR = "#90caf9"


def _run_explorer(show: Any, **controls: Any) -> widgets.Widget:
    """A widget: the controls, and `show(**their values)` re-run below them on every change."""
    shown = widgets.Output()

    def refresh(_: Any = None) -> None:
        shown.clear_output(wait=True)
        with shown:
            show(**{name: control.value for name, control in controls.items()})

    for control in controls.values():
        control.observe(refresh, names="value")
    refresh()
    return widgets.VBox([*controls.values(), shown])


def _summary(outcome: sc.Outcome, what: str) -> None:
    print(f"{outcome.scenario.handler}, {what}: {outcome.charges} charge(s), ledger {outcome.ledger}, "
          f"record {outcome.record}, failure queue {outcome.dlq} -> {outcome.verdict}")


def _invocations(outcome: sc.Outcome) -> pd.DataFrame:
    """What each invocation did, with the status its handler returned (even after a timeout)."""
    frame = attempts_frame(outcome)[["t (s)", "delivery", "attempt", "steps", "outcome"]]
    return frame.assign(returned=[leases.last_status(outcome, a.delivery, a.attempt)
                                  for a in outcome.trace])


def explore_copy(handler: str = "robust", step: str = "before_charge") -> sc.Outcome:
    """One upload, and a copy of its event that runs when the first invocation reaches `step`."""
    outcome = leases.copy_at(handler, step)
    _summary(outcome, f"copy arriving at {step}")
    display(_invocations(outcome))
    display(timeline(outcome))
    plt.close("all")
    return outcome


def copy_explorer(handler: str = "robust", step: str = "before_charge") -> widgets.Widget:
    """Pick a handler and the step at which a concurrent copy of the event arrives."""
    return _run_explorer(
        explore_copy,
        handler=widgets.ToggleButtons(options=tuple(sc.HANDLERS), value=handler,
                                      description="handler"),
        step=widgets.ToggleButtons(options=leases.STEPS, value=step, description="copy at"))


def lease_timeline(outcome: sc.Outcome, title: str | None = None, ax: Any = None) -> Any:
    """The attempt timeline with each lease drawn as a bar from the claim to the deadline."""
    fig = timeline(outcome, title=title, ax=ax)
    ax = ax or fig.axes[0]
    deliveries = sorted({a.delivery for a in outcome.trace})
    windows = leases.lease_windows(outcome)
    for n, (delivery, start, end) in enumerate(windows):
        ax.barh(deliveries.index(delivery), end - start, left=start, height=0.3,
                color=LEASE_COLOUR, alpha=0.6, zorder=0, label="lease" if n == 0 else None)
    if windows:
        right = max(max(end for _, _, end in windows), max(a.start for a in outcome.trace))
        ax.set_xlim(-10 - right * 0.01, right * 1.04 + 25)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def lease_timelines(*outcomes: sc.Outcome) -> Any:
    """Several runs one above the other, each with its leases."""
    rows = [max(1, len({a.delivery for a in o.trace})) for o in outcomes]
    fig, axes = plt.subplots(len(outcomes), 1, figsize=(9, sum(1.2 + 0.7 * r for r in rows)),
                             squeeze=False, gridspec_kw={"height_ratios": rows})
    for outcome, ax in zip(outcomes, axes[:, 0]):
        s = outcome.scenario
        lease_timeline(outcome, ax=ax, title=(
            f"{s.handler}, timeout {s.timeout:.0f} s, {s.fault} ({s.how}): "
            f"{outcome.charges} charge(s), {outcome.verdict}"))
    return fig


def explore_zombie(handler: str = "keyed", pause: float = 45.0) -> sc.Outcome:
    """The first invocation charges, stalls `pause` s, then commits; a copy arrives at the stall's end."""
    outcome = leases.zombie(handler, pause)
    _summary(outcome, f"stall of {pause:.0f} s after the charge")
    display(_invocations(outcome))
    display(lease_timeline(outcome, title=f"{handler}: the first invocation stalls {pause:.0f} s "
                                          f"after the charge; a copy arrives as the stall ends"))
    plt.close("all")
    return outcome


def zombie_explorer(handler: str = "keyed", pause: float = 45.0) -> widgets.Widget:
    """Pick a handler and how long the first invocation stalls between its charge and its commit."""
    return _run_explorer(
        explore_zombie,
        handler=widgets.ToggleButtons(options=("robust", "keyed"), value=handler,
                                      description="handler"),
        pause=widgets.IntSlider(value=int(pause), min=0, max=120, step=5, description="stall (s)"))


TTL_CHOICES = (("10 minutes", 600), ("1 hour", 3600), ("6 hours", 21_600), ("1 day", 86_400))
DELAY_CHOICES = (("5 minutes", 300), ("30 minutes", 1800), ("1 hour", 3600), ("2 hours", 7200),
                 ("4 hours", 14_400), ("6 hours", 21_600))


def late_frame(runs: Iterable[expiry.LateRun]) -> pd.DataFrame:
    """One row per late-duplicate run: the record's life, the copy's arrival, what it did."""
    return pd.DataFrame([run.row() for run in runs])


def record_life_chart(runs: Iterable[expiry.LateRun], title: str | None = None) -> Any:
    """Each run's record life (a bar from the claim to `expires_at`) against the moment the
    late copy arrived, in hours, over the 6-hour window in which a copy can still come."""
    runs = list(runs)
    fig, ax = plt.subplots(figsize=(10, 1.3 + 0.55 * len(runs)))
    window = DEFAULT_MAX_EVENT_AGE / 3600
    ax.axvspan(0, window, color="#fff1c1", zorder=0, label="a copy can still arrive (max event age)")
    for y, run in enumerate(runs):
        life = run.expires_at / 3600
        ax.barh(y, life, left=0, height=0.4, color=LEASE_COLOUR, zorder=1,
                label="record alive" if y == 0 else None)
        charged = run.outcome.charges > 1 or run.outcome.ledger > 1
        ax.scatter([run.delay / 3600], [y], marker="X" if charged else "o", s=110, zorder=3,
                   color="#c62828" if charged else "#2e7d32")
        ax.annotate(run.late_status, (run.delay / 3600, y), textcoords="offset points",
                    xytext=(8, 6), fontsize=8)
    labels = [f"{r.handler}, TTL {_duration(r.ttl_seconds)}" + (", swept" if r.swept else "")
              for r in runs]
    ax.set_yticks(range(len(runs)), labels)
    ax.set_ylim(len(runs) - 0.3, -0.7)  # the first run on top
    ax.set_xlim(0, max([window * 1.15] + [r.delay / 3600 * 1.15 for r in runs]))
    ax.set_xlabel("hours after the upload   (o the late copy stood down, X it ran the work again)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    _ = ax.set_title(title or "does the record outlive the last copy?", fontsize=10)
    fig.tight_layout()
    return fig


def _duration(seconds: float) -> str:
    for label, value in TTL_CHOICES + DELAY_CHOICES:
        if value == seconds:
            return label
    return f"{seconds:.0f} s"


def explore_late_duplicate(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200,
                           swept: bool = False) -> expiry.LateRun:
    """One upload, and the same event again `delay` seconds later, against RECORD_TTL_SECONDS."""
    run = expiry.late_duplicate(handler, ttl_seconds, delay, swept)
    display(late_frame([run]))
    display(record_life_chart([run]))
    plt.close("all")
    return run


def late_duplicate_explorer(handler: str = "keyed", ttl_seconds: int = 600, delay: float = 7200,
                            swept: bool = False) -> widgets.Widget:
    """Pick the record's TTL, when the late copy arrives, and whether DynamoDB had swept yet."""
    return _run_explorer(
        explore_late_duplicate,
        handler=widgets.ToggleButtons(options=("robust", "keyed"), value=handler, description="handler"),
        ttl_seconds=widgets.Dropdown(options=TTL_CHOICES, value=ttl_seconds, description="record TTL"),
        delay=widgets.SelectionSlider(options=DELAY_CHOICES, value=delay, description="copy after"),
        swept=widgets.Checkbox(value=swept, description="TTL sweep ran before the copy"))


def report_frame(report: Any) -> pd.DataFrame:
    """The reconciliation report (idem.core.reconcile.Report), one finding a row."""
    rows = [{"finding": "missing work", "what": m.object,
             "detail": f"no done record and no charge (record: {m.record})"} for m in report.missing]
    rows += [{"finding": "stuck record", "what": s.source or s.key,
              "detail": f"in_progress, lease ended {s.overdue_seconds:.0f} s ago"} for s in report.stuck]
    rows += [{"finding": "double charge", "what": d.reference,
              "detail": f"{len(d.charge_ids)} charges: {', '.join(d.charge_ids)}"}
             for d in report.double_charges]
    rows += [{"finding": "account mismatch", "what": f"account {a.account}",
              "detail": f"provider {a.provider_charges} charge(s), {a.provider_cents} cents; "
                        f"ledger {a.ledger_charges}, {a.ledger_cents} cents"} for a in report.mismatches]
    return pd.DataFrame(rows, columns=["finding", "what", "detail"])


def footprints_frame(counts: dict[str, int]) -> pd.DataFrame:
    """The footprint counts (idem.local.batches.footprints) as a one-column table."""
    return pd.DataFrame({"count": counts}).rename_axis("footprint")


# -- chapters 02-04: races for a claim, upload stories, one fault for every handler ---------
from .local import race as _race  # noqa: E402  (kept with the views that use it)
from .core.keys import RECIPES as _RECIPES  # noqa: E402

RACE_COLOURS = {"read_then_write": "#c62828", "conditional_put": "#2e7d32"}


def rows_frame(rows: Iterable[Any]) -> pd.DataFrame:
    """A table from a list of dataclass rows (or dicts), one column per field."""
    return pd.DataFrame([r if isinstance(r, dict) else dict(vars(r)) for r in rows])


def race_chart(reports: Iterable[_race.RaceReport], title: str | None = None) -> Any:
    """Claims won in each round (one round = one upload, so a win is a charge), per strategy."""
    reports = list(reports)
    fig, ax = plt.subplots(figsize=(9, 3.2))
    top = max([r.threads for r in reports] + [2])
    for report in reports:
        won = report.winners_per_round
        ax.step(range(1, len(won) + 1), won, where="mid", lw=2,
                color=RACE_COLOURS.get(report.strategy, "#6a1b9a"),
                label=f"{report.strategy}: {sum(won)} charges for {report.rounds} uploads")
    ax.axhline(1, color="#333", ls=":", lw=1)
    ax.annotate("one winner per upload: one charge", (1, 1), textcoords="offset points",
                xytext=(4, 5), fontsize=8, color="#333")
    ax.set_ylim(-0.3, top + 0.8)
    ax.set_xlabel("round (a fresh key each round)")
    ax.set_ylabel("threads that won")
    ax.legend(loc="center right", fontsize=8)
    threads = reports[0].threads if reports else 0
    _ = ax.set_title(title or f"{threads} threads race for one claim, round after round", fontsize=10)
    fig.tight_layout()
    return fig


def race_explore(threads: int = 8, rounds: int = 50) -> list[_race.RaceReport]:
    """Race real threads with both claim strategies; print the tallies and draw them."""
    reports = [_race.race(threads, rounds, strategy) for strategy in ("read_then_write", "conditional_put")]
    for report in reports:
        print(report.summary())
    display(race_chart(reports))
    plt.close("all")
    return reports


def race_explorer(threads: int = 8, rounds: int = 50) -> widgets.Widget:
    """Pick how many threads race and for how many rounds."""
    controls = {
        "threads": widgets.IntSlider(value=threads, min=2, max=16, description="threads",
                                     continuous_update=False),
        "rounds": widgets.IntSlider(value=rounds, min=10, max=100, step=10, description="rounds",
                                    continuous_update=False),
    }
    return widgets.VBox([*controls.values(), widgets.interactive_output(race_explore, controls)])


STORY_COLOURS = {"right": VERDICT_COLOURS["exactly_once"], "extra": VERDICT_COLOURS["double_charge"],
                 "missed": VERDICT_COLOURS["silent_loss"]}


def story_grid(runs: Iterable[key_stories.StoryRun], title: str | None = None) -> Any:
    """Recipes down, stories across: charges against uploads, coloured right / extra / missed."""
    runs = list(runs)
    recipes = list(dict.fromkeys(r.recipe for r in runs))
    titles = list(dict.fromkeys(r.story.title for r in runs))
    fig, ax = plt.subplots(figsize=(2.1 * len(titles) + 1.6, 0.55 * len(recipes) + 1.3))
    for run in runs:
        x, y = titles.index(run.story.title), recipes.index(run.recipe)
        kind = "extra" if run.extra else "missed" if run.missed else "right"
        ax.add_patch(plt.Rectangle((x - 0.48, y - 0.45), 0.96, 0.9, color=STORY_COLOURS[kind]))
        ax.text(x, y, f"{run.charges} of {run.wanted}" + ("" if kind == "right" else f"  {kind}"),
                ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(titles)), [t.replace(", ", ",\n") for t in titles], fontsize=9)
    ax.set_yticks(range(len(recipes)), recipes)
    ax.set_xlim(-0.5, len(titles) - 0.5)
    ax.set_ylim(len(recipes) - 0.5, -0.5)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel("charges made, of the uploads in the story", fontsize=9)
    _ = ax.set_title(title or "which key recipe charges each story right?", fontsize=10, pad=34)
    fig.tight_layout()
    return fig


def story_explore(story: str = "same bytes again", recipe: str = "version") -> key_stories.StoryRun:
    """Run one upload story through one key recipe: every arrival, its key, and the verdict."""
    run = key_stories.run_story(story, recipe)
    print(f"{run.story.title} ({run.story.note}), recipe {run.recipe}"
          f"{'' if run.story.versioned else ', bucket NOT versioned'}: {run.summary()}")
    display(Styled(rows_frame(run.rows).style.set_uuid("story").hide(axis="index").format({"t": "{:g}"}).map(
        lambda v: "" if v == "ok" else "background-color: #f6c6c3; color: black", subset=["verdict"])))
    return run


def story_explorer(story: str = "same bytes again", recipe: str = "version") -> widgets.Widget:
    """Pick an upload story and a key recipe: see which arrivals are charged."""
    controls = {
        "story": widgets.Dropdown(options=tuple(key_stories.STORIES), value=story, description="story"),
        "recipe": widgets.ToggleButtons(options=tuple(_RECIPES), value=recipe,
                                        description="recipe"),
    }
    return widgets.VBox([*controls.values(), widgets.interactive_output(story_explore, controls)])


def timelines(outcomes: Iterable[sc.Outcome]) -> Any:
    """Several runs' timelines one above the other, on one time axis."""
    outcomes = list(outcomes)
    rows = [max(1, len({a.delivery for a in o.trace})) for o in outcomes]
    fig, axes = plt.subplots(len(outcomes), 1, figsize=(9, sum(1.1 + 0.6 * r for r in rows)),
                             squeeze=False, sharex=True, gridspec_kw={"height_ratios": rows})
    for outcome, ax in zip(outcomes, axes[:, 0]):
        timeline(outcome, ax=ax)
    for ax in axes[:-1, 0]:
        ax.set_xlabel("")
    fig.tight_layout()
    return fig


def explore_fault(fault: str = "at_charge", times: str = "once",
                  handlers: tuple[str, ...] = ("naive", "claim_first", "robust")) -> list[sc.Outcome]:
    """The same fault for every handler: their outcome rows, and their timelines."""
    outcomes = [sc.run(sc.Scenario(h, fault, "-" if fault == "none" else times)) for h in handlers]
    display(outcome_frame(outcomes).set_index("handler"))
    display(timelines(outcomes))
    plt.close("all")
    return outcomes


def fault_explorer(fault: str = "at_charge", times: str = "once") -> widgets.Widget:
    """Pick one fault point and how often it fires: every handler meets the same fault."""
    controls = {
        "fault": widgets.Dropdown(options=("none", "at_charge", "after_charge", "after_commit"),
                                  value=fault, description="fault"),
        "times": widgets.ToggleButtons(options=sc.TIMES, value=times, description="times"),
    }
    return widgets.VBox([*controls.values(), widgets.interactive_output(explore_fault, controls)])



# -- chapter 08 -------------------------------------------------------------------------------
def bench_chart(rates: pd.DataFrame, title: str = "The same charge, five guards, one backend") -> Any:
    """Events per CPU-second for first deliveries and duplicates, one pair of bars per handler."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    rates[["rate_first", "rate_duplicate"]].rename(
        columns={"rate_first": "first deliveries", "rate_duplicate": "duplicates"}).plot.bar(ax=ax)
    ax.set_ylabel("events per CPU-second")
    _ = ax.set_title(title)
    fig.tight_layout()
    return fig
