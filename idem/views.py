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

from .local import scenarios as sc
from .local.runtime import Attempt

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
    return table.style.set_uuid("matrix").map(_verdict_colour)


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
        "outcome": a.outcome, "ddb_calls": a.ddb_calls,
        "result": a.error or _statuses(a.result),
    } for a in _trace(run)])


def _statuses(result: Any) -> str:
    """What the function returned for each record: charged, duplicate, ..."""
    if not isinstance(result, dict):
        return str(result)
    return ", ".join(p.get("status", "?") for p in result.get("processed", [])) or result.get("status", "")


def items_frame(items: Iterable[dict[str, Any]], width: int = 30) -> pd.DataFrame:
    """Items read back from a table, long keys shortened so they fit on screen."""
    rows = []
    for item in items:
        row = {k: _shorten(v, width) for k, v in item.items()}
        rows.append(row)
    frame = pd.DataFrame(rows, dtype=object).fillna("")
    first = [c for c in ("pk", "status") if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


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
