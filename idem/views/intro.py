"""Views for the first chapters: a run's result in the columns a reader needs first, and an
explorer that shows it with its timeline (chapter 01); what a lost conditional
put hands back and what taking a piece of work costs (chapter 02)."""
from __future__ import annotations

from typing import Iterable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from ..explore import scenarios as sc
from . import charts, tables
from ..lessons.scribes.claims import ClaimCost, claim_costs, lost_put  # noqa: F401 (chapter 02 reads them as views.*)
from .widgets import explorer, pinned, run_scenario

#: What a run did, one column a count (tables.OUTCOME_COLUMNS says what each counts).
RESULT_COLUMNS = ("handler", "charges", "ledger_charges", "invocations", "in_failure_queue",
                  "dynamodb_calls", "verdict")


def result_frame(outcomes: Iterable[sc.Outcome]) -> pd.DataFrame:
    """One row per run: the handler, then what the run counted, then the verdict."""
    return tables.outcome_frame(outcomes)[list(RESULT_COLUMNS)]


def show_outcome(outcome: sc.Outcome) -> None:
    """A run's result row and its timeline."""
    display(result_frame([outcome]).set_index("handler"))
    display(charts.timeline(outcome))
    plt.close("all")


explore_outcome = pinned(run_scenario, show_outcome,
                         "Run one scenario and show its result row and its timeline (the explorer's twin).")


def outcome_explorer(handler: str = "naive", fault: str = "after_charge", times: str = "once",
                     delivery: str = "single") -> widgets.Widget:
    """Pick a handler, a fault point, how often it fails and how S3 delivers: see what happens."""
    return explorer(handler, fault, times, delivery, show=show_outcome)
