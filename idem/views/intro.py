"""Views for the first chapters: a run's result in the columns a reader needs first, a timeline
with a legend for its marks, and an explorer that shows both."""
from __future__ import annotations

from typing import Any, Iterable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display
from matplotlib.lines import Line2D

from ..local import scenarios as sc
from ..local.runtime import Attempt
from . import charts, tables
from .widgets import FAULTS, make_explorer, pinned, run_scenario

#: What a run did, one column a count (tables.OUTCOME_COLUMNS says what each counts).
RESULT_COLUMNS = ("handler", "charges", "ledger_charges", "invocations", "in_failure_queue",
                  "dynamodb_calls", "verdict")
#: What each outcome mark of a timeline means, for its legend.
OUTCOME_LABELS = {"ok": "invocation succeeded", "error": "invocation failed (an error)",
                  "crash": "invocation crashed", "timeout": "invocation timed out"}
MONEY_COLOUR = "#b8860b"  # charts.timeline writes the label of an invocation that charged in it


def result_frame(outcomes: Iterable[sc.Outcome]) -> pd.DataFrame:
    """One row per run: the handler, then what the run counted, then the verdict."""
    return tables.outcome_frame(outcomes)[list(RESULT_COLUMNS)]


def labelled_timeline(run: sc.Outcome | Iterable[Attempt], title: str | None = None) -> Any:
    """`charts.timeline`, with a legend for every mark and colour it draws."""
    trace = tables.attempts_of(run)
    fig = charts.timeline(run, title)
    ax = fig.axes[0]
    if ax.get_legend() is None:
        handles = [Line2D([], [], marker=marker, color=colour, linestyle="", markersize=8,
                          label=OUTCOME_LABELS.get(outcome, outcome))
                   for outcome, (marker, colour) in charts.OUTCOME_MARKERS.items()
                   if any(a.outcome == outcome for a in trace)]
        handles.append(Line2D([], [], color="#999", lw=1, label="one delivery and its retries"))
        handles.append(Line2D([], [], marker="$\\$$", color=MONEY_COLOUR, linestyle="", markersize=8,
                              label="$ in gold: money moved"))
        handles.append(Line2D([], [], linestyle="", label="#n cN: attempt n, container N (* cold)"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                  frameon=False)
        fig.set_size_inches(11, fig.get_size_inches()[1])
        fig.tight_layout()
    return fig


def show_outcome(outcome: sc.Outcome) -> None:
    """A run's result row and its timeline."""
    display(result_frame([outcome]).set_index("handler"))
    display(labelled_timeline(outcome))
    plt.close("all")


explore_outcome = pinned(run_scenario, show_outcome,
                         "Run one scenario and show its result row and its timeline (the explorer's twin).")


def outcome_explorer(handler: str = "naive", fault: str = "after_charge", times: str = "once",
                     delivery: str = "single") -> widgets.Widget:
    """Pick a handler, a fault point, how often it fails and how S3 delivers: see what happens."""
    return make_explorer(
        {"handler": widgets.Dropdown(options=sc.handler_names(), value=handler, description="handler"),
         "fault": widgets.Dropdown(options=FAULTS, value=fault, description="fault"),
         "times": widgets.ToggleButtons(options=("once", "always"),
                                        value=times if times != "-" else "once", description="times"),
         "delivery": widgets.ToggleButtons(options=sc.DELIVERIES, value=delivery, description="delivery")},
        run_scenario, show_outcome, rows=[("handler", "fault")],
        links={"times": lambda v: {"disabled": v["fault"] == "none"}})
