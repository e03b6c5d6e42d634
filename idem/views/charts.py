"""Pictures for the chapters (matplotlib): timelines on the virtual clock, races, stories, costs."""
from __future__ import annotations

from typing import Any, Iterable

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import pandas as pd

from ..lessons.auditing import expiry
from ..lessons.scribes import key_stories, leases
from ..explore import race
from ..explore import scenarios as sc
from ..sim.runtime import DEFAULT_MAX_EVENT_AGE, Attempt
from .tables import VERDICT_COLOURS, attempts_of

OUTCOME_MARKERS = {"ok": ("o", "#2e7d32"), "error": ("X", "#c62828"),
                   "crash": ("X", "#6a1b9a"), "timeout": ("X", "#ef6c00")}
LEASE_COLOUR = "#90caf9"
RACE_COLOURS = {"read_then_write": "#c62828", "conditional_put": "#2e7d32"}
STORY_COLOURS = {"right": VERDICT_COLOURS["exactly_once"], "extra": VERDICT_COLOURS["double_charge"],
                 "missed": VERDICT_COLOURS["silent_loss"]}
#: Named durations: the choices of the record-life explorer, and the labels of its chart.
TTL_CHOICES = (("10 minutes", 600), ("1 hour", 3600), ("6 hours", 21_600), ("1 day", 86_400))
DELAY_CHOICES = (("5 minutes", 300), ("30 minutes", 1800), ("1 hour", 3600), ("2 hours", 7200),
                 ("4 hours", 14_400), ("6 hours", 21_600))


def timeline(run: sc.Outcome | Iterable[Attempt], title: str | None = None, ax: Any = None) -> Any:
    """Each invocation as a point on the virtual clock, one row per delivery.

    A coin marks an attempt that moved money; red crosses are failed attempts; the last
    column says where the event ended up.
    """
    trace = attempts_of(run)
    alone = ax is None  # a figure of its own gets a legend of its own
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, max(2.2, 1.2 + 0.7 * len({a.delivery for a in trace}))))
    else:
        fig = ax.figure
    deliveries = sorted({a.delivery for a in trace})
    seen: dict[int, int] = {}
    for a in trace:
        y = deliveries.index(a.delivery)
        marker, colour = OUTCOME_MARKERS[a.outcome]
        ax.scatter([a.start], [y], marker=marker, s=120, color=colour, zorder=3)
        charged = any(step == "charged" for _, step in a.steps)
        label = f"#{a.attempt} {a.container}{'*' if a.cold else ''}" + (" $" if charged else "")
        # a delivery's attempts take turns above and below their row: on a long axis (a 900 s
        # lease) attempts a minute apart would otherwise print their labels over each other
        below = seen.get(a.delivery, 0) % 2 == 1
        seen[a.delivery] = seen.get(a.delivery, 0) + 1
        ax.annotate(label, (a.start, y), textcoords="offset points", xytext=(0, -12 if below else 10),
                    ha="center", va="top" if below else "baseline", fontsize=8,
                    color="#b8860b" if charged else "#333")
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
    if alone:
        timeline_legend(ax, trace)
    fig.tight_layout()
    return fig


#: What each outcome mark of a timeline means, for its legend.
OUTCOME_LABELS = {"ok": "invocation succeeded", "error": "invocation failed (an error)",
                  "crash": "invocation crashed", "timeout": "invocation timed out"}


def timeline_legend(ax: Any, trace: list[Attempt], extra: Iterable[Any] = ()) -> None:
    """A legend for every mark and colour a timeline draws (and `extra` handles, such as a
    lease bar's), beside its axes: every panel of a multi-panel chart gets its own."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker=marker, color=colour, linestyle="", markersize=8,
                      label=OUTCOME_LABELS.get(outcome, outcome))
               for outcome, (marker, colour) in OUTCOME_MARKERS.items()
               if any(a.outcome == outcome for a in trace)]
    handles.append(Line2D([], [], color="#999", lw=1, label="one delivery and its retries"))
    handles.append(Line2D([], [], marker="$\\$$", color="#b8860b", linestyle="", markersize=8,
                          label="money moved in this invocation"))
    handles.append(Line2D([], [], linestyle="", label="#n cN: attempt n, container N (* cold)"))
    handles.extend(extra)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def timelines(outcomes: Iterable[sc.Outcome]) -> Any:
    """Several runs' timelines one above the other, on one time axis."""
    outcomes = list(outcomes)
    rows = [max(1, len({a.delivery for a in o.trace})) for o in outcomes]
    fig, axes = plt.subplots(len(outcomes), 1, figsize=(9, sum(1.1 + 0.6 * r for r in rows)),
                             squeeze=False, sharex=True, gridspec_kw={"height_ratios": rows})
    for outcome, ax in zip(outcomes, axes[:, 0]):
        timeline(outcome, ax=ax)
        timeline_legend(ax, outcome.trace)
    for ax in axes[:-1, 0]:
        ax.set_xlabel("")
    fig.tight_layout()
    return fig


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
    timeline_legend(ax, outcome.trace, [Patch(color=LEASE_COLOUR, alpha=0.6, label="lease")] if windows else [])
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


def record_life_chart(runs: Iterable[expiry.LateRun], title: str | None = None) -> Any:
    """Each run's record life (a bar from the claim to `expires_at`) against the moment the
    late copy arrived, in hours, over the 6-hour window in which a copy can still come."""
    runs = list(runs)
    fig, ax = plt.subplots(figsize=(10, 1.3 + 0.55 * len(runs)))
    window = DEFAULT_MAX_EVENT_AGE / 3600
    right = max([window * 1.15] + [r.delay / 3600 * 1.15 for r in runs])
    ax.axvspan(0, window, color="#fff1c1", zorder=0, label="a copy can still arrive (max event age)")
    drawn: set[str] = set()

    def once(label: str) -> str | None:  # each legend entry once
        if label in drawn:
            return None
        drawn.add(label)
        return label

    for y, run in enumerate(runs):
        never = run.expires_at == float("inf")  # keyed's done record: no expires_at at all
        ax.barh(y, right if never else run.expires_at / 3600, left=0, height=0.4,
                color=LEASE_COLOUR, hatch="//" if never else None, edgecolor="white", zorder=1,
                label=once("record never expires (done)" if never else "record alive"))
        if not never and not run.swept:  # expired, yet still in the table: TTL deletes late
            ax.barh(y, right - run.expires_at / 3600, left=run.expires_at / 3600, height=0.4,
                    color=LEASE_COLOUR, alpha=0.35, hatch="..", edgecolor="white", zorder=1,
                    label=once("expired, not yet deleted by TTL"))
        charged = run.outcome.charges > 1 or run.outcome.ledger > 1
        ax.scatter([run.delay / 3600], [y], marker="X" if charged else "o", s=110, zorder=3,
                   color="#c62828" if charged else "#2e7d32",
                   label=once("late copy ran the work again" if charged else "late copy stood down"))
        ax.annotate(run.late_status, (run.delay / 3600, y), textcoords="offset points",
                    xytext=(8, 6), fontsize=8)
    labels = [f"{r.handler}, TTL {duration(r.ttl_seconds)}" + (", swept" if r.swept else "")
              for r in runs]
    ax.set_yticks(range(len(runs)), labels)
    ax.set_ylim(len(runs) - 0.3, -0.7)  # the first run on top
    ax.set_xlim(0, right)
    ax.set_xlabel("hours after the upload")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    _ = ax.set_title(title or "does the record outlive the last copy?", fontsize=10)
    fig.tight_layout()
    return fig


def duration(seconds: float) -> str:
    """A number of seconds by its name among the choices above (`1 hour`), or in seconds."""
    for label, value in TTL_CHOICES + DELAY_CHOICES:
        if value == seconds:
            return label
    return f"{seconds:.0f} s"


def race_chart(reports: Iterable[race.RaceReport], title: str | None = None) -> Any:
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


def bench_chart(rates: pd.DataFrame, title: str = "The same charge, five guards, one backend") -> Any:
    """Events per CPU-second for first deliveries and duplicates, one pair of bars per handler."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    rates[["rate_first", "rate_duplicate"]].rename(
        columns={"rate_first": "first deliveries", "rate_duplicate": "duplicates"}).plot.bar(ax=ax)
    ax.set_ylabel("events per CPU-second")
    _ = ax.set_title(title)
    fig.tight_layout()
    return fig
