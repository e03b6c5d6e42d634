"""Tables for the chapters: pandas frames, and styled tables that keep a plain text form."""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from ..explore.report.check_report import VERDICTS
from ..core.clock import EPOCH
from ..lessons.auditing import expiry
from ..lessons.scribes import leases
from ..explore.judge.verdicts import BREAKS
from ..explore import scenarios as sc
from ..sim.runtime import Attempt

VERDICT_COLOURS = {
    "exactly_once": "#d8f0d2",
    "needs_attention": "#fff1c1",
    "failed_visibly": "#dce9f7",
    "double_charge": "#f6c6c3",
    "silent_mismatch": "#f3d3ea",
    "silent_loss": "#e6e0f5",
}


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


class Whole(pd.DataFrame):
    """A frame shown with every cell whole.

    pandas cuts a cell longer than `display.max_colwidth` (50 characters) to "...", in the
    notebook's HTML and in its text. A view whose cells say something past that returns a
    `Whole`: the same frame, shown uncut, with no global option changed. Selecting columns or
    transposing keeps it whole.
    """

    @property
    def _constructor(self) -> type[Whole]:
        return Whole

    def _repr_html_(self) -> str | None:
        with pd.option_context("display.max_colwidth", None):
            return super()._repr_html_()

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", None):
            return super().__repr__()


#: The outcome fields (`Outcome.row()`, what `sim --json` prints) as a table's columns: each
#: name says what it counts. `charges` are the provider's, the ground truth for money.
OUTCOME_COLUMNS = {
    "ledger": "ledger_charges",  # charges the ledger's account entry records
    "attempts": "invocations",  # every invocation: each delivery's first attempt and its retries
    "dlq": "in_failure_queue",  # messages in the failure queue (one per event given up on)
    "record": "record_status",  # the status of the handler's record of the upload, or -
}


#: Columns a table may ask for that the outcome's row does not hold: how its scenario was set up.
SCENARIO_COLUMNS = {
    "how": lambda s: s.how,  # how the function ends: an exception, or a crash
    "timeout": lambda s: s.timeout,  # the function's timeout, in seconds
    "containers": lambda s: "reused" if s.reuse_containers else "fresh",
}


def outcome_frame(outcomes: Iterable[sc.Outcome], columns: Sequence[str] = ()) -> pd.DataFrame:
    """One row per scenario, with the outcome fields under names that say what they count
    (OUTCOME_COLUMNS; `dynamodb_calls` counts every DynamoDB call the function made); only
    `columns`, in that order, when given, which may also name how a scenario was set up
    (SCENARIO_COLUMNS)."""
    runs = list(outcomes)
    frame = pd.DataFrame([o.row() for o in runs], columns=list(sc.OUTCOME_FIELDS)).rename(columns=OUTCOME_COLUMNS)
    for name in columns:
        if name in SCENARIO_COLUMNS and name not in frame.columns:
            frame[name] = [SCENARIO_COLUMNS[name](o.scenario) for o in runs]
    return _only(frame, columns)


def _only(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The frame, or only the named columns of it (KeyError naming any it lacks)."""
    return frame[list(columns)] if columns else frame


def _row_label(row: dict[str, Any]) -> str:
    if row["delivery"] != "single":
        return f"{row['fault']}, {row['delivery']} delivery"
    return row["fault"] if row["times"] == "-" else f"{row['fault']}, {row['times']}"


def matrix_table(outcomes: Iterable[sc.Outcome]) -> Styled:
    """One column per handler; each cell is the provider's charges, then the verdict, coloured by it."""
    rows = [o.row() for o in outcomes]
    frame = pd.DataFrame({
        "scenario": [_row_label(r) for r in rows],
        "handler": [r["handler"] for r in rows],
        "cell": [f"{r['charges']} {r['verdict']}" for r in rows],
    })
    order = list(dict.fromkeys(frame["scenario"]))
    handlers = list(dict.fromkeys(frame["handler"]))
    table = frame.pivot(index="scenario", columns="handler", values="cell").loc[order, handlers]
    table.columns.name, table.index.name = None, "fault point, once/always"
    shown = [v for v in VERDICT_COLOURS if any(str(c).endswith(f" {v}") for c in frame["cell"])]
    return Styled(table.style.set_uuid("matrix").map(_verdict_colour).set_caption(colour_key(shown)))


def colour_key(verdicts: Iterable[str]) -> str:
    """A legend for a coloured table: each verdict in its own colour, in one line of HTML."""
    return "colours: " + " ".join(
        f'<span style="background-color: {VERDICT_COLOURS[v]}; color: black; padding: 0 4px">{v}</span>'
        for v in verdicts)


def _verdict_colour(cell: str) -> str:
    verdict = str(cell).split(" ", 1)[-1]
    return f"background-color: {VERDICT_COLOURS.get(verdict, 'white')}; color: black"


def attempts_of(run: sc.Outcome | Iterable[Attempt]) -> list[Attempt]:
    """The invocations of a scenario's run, or the attempts themselves."""
    return list(run.trace) if isinstance(run, sc.Outcome) else list(run)


def attempts_frame(run: sc.Outcome | Iterable[Attempt], columns: Sequence[str] = ()) -> pd.DataFrame:
    """Every invocation (of a scenario, or a runtime's `attempts`): when, where, what, how it ended;
    only `columns` when given. An error is shown whole (`Whole`): its message says where it was raised."""
    return _only(Whole([{
        "t (s)": a.start, "delivery": a.delivery, "attempt": a.attempt,
        "container": f"{a.container} ({'cold' if a.cold else 'warm'})",
        "steps": " > ".join(step for _, step in a.steps) or "-",
        "outcome": a.outcome, "dynamodb_calls": a.dynamodb_calls,
        "result": a.error or _statuses(a.result),
    } for a in attempts_of(run)]), columns)


def _statuses(result: Any) -> str:
    """What the function returned for each record: charged, duplicate, ..."""
    if not isinstance(result, dict):
        return str(result)
    return ", ".join(p.get("status", "?") for p in result.get("processed", [])) or result.get("status", "")


def invocations_frame(outcome: sc.Outcome) -> pd.DataFrame:
    """What each invocation did, with the status its handler returned (even after a timeout)."""
    frame = attempts_frame(outcome)[["t (s)", "delivery", "attempt", "steps", "outcome"]]
    return frame.assign(returned=[leases.last_status(outcome, a.delivery, a.attempt)
                                  for a in outcome.trace])


#: Item attributes holding epoch seconds (Powertools' in-progress expiry: milliseconds).
TIME_ATTRIBUTES = {"created_at": 1, "expires_at": 1, "lease_until": 1, "booked_at": 1, "first_attempt_at": 1,
                   "expiration": 1, "in_progress_expiration": 1000}


def items_frame(items: Iterable[dict[str, Any]], width: int = 30, hide: tuple[str, ...] = (),
                columns: Sequence[str] = ()) -> pd.DataFrame:
    """Items read back from a table, long keys shortened so they fit on screen; the attributes
    named in `hide` left out (a record's charge `metadata`, say, when the lesson is elsewhere), or
    only those in `columns`.

    Times are stored as epoch seconds (what DynamoDB's TTL needs); they are shown here as
    seconds on the virtual clock, `t=600`, so they can be read against the timelines.
    """
    rows = []
    for item in items:
        row = {k: _on_the_clock(v, TIME_ATTRIBUTES[k]) if k in TIME_ATTRIBUTES else _shorten(v, width)
               for k, v in item.items() if k not in hide}
        rows.append(row)
    frame = Whole(rows, dtype=object).fillna("")
    first = [c for c in ("pk", "status") if c in frame.columns]
    return _only(frame[first + [c for c in frame.columns if c not in first]], columns)


#: What a compact view says about an item, in this order (the rest is left to `items_frame`).
COMPACT_FIELDS = ("account", "cents", "charges", "charge_id", "owner", "lease_until", "expires_at",
                  "booked_at", "result")


def compact_items(items: Iterable[dict[str, Any]], width: int = 24) -> pd.DataFrame:
    """What a table holds, one short row per item: its key, its status, and what it says.

    The key is shortened to `width` characters; `holds` names the few attributes that tell the
    story (owner, lease, amounts, the result's status and charge) so that the row fits a page.
    Two say nothing new and are left out: a `charge_id` the result names too, and the lease of
    a `done` record (it ended with the commit). The rows are shown whole (`Whole`).
    """
    rows = []
    for item in items:
        said = []
        result = item.get("result")
        for name in COMPACT_FIELDS:
            value = item.get(name)
            if value in (None, ""):
                continue
            if name == "charge_id" and isinstance(result, dict) and result.get("charge_id") == value:
                continue
            if name == "lease_until" and item.get("status") == "done":
                continue
            if name in TIME_ATTRIBUTES:
                value = _on_the_clock(value, TIME_ATTRIBUTES[name])
            elif name == "result" and isinstance(value, dict):
                value = " ".join(str(value[k]) for k in ("status", "charge_id") if value.get(k))
            said.append(f"{name}={_shorten(value, 24 if name == 'result' else 18)}")
        rows.append({"item": _shorten(str(item.get("pk", "")), width),
                     "status": item.get("status", ""), "holds": ", ".join(said)})
    return Whole(rows, columns=["item", "status", "holds"])


def _on_the_clock(value: Any, per_second: int) -> Any:
    if not isinstance(value, (int, float)) or not value:
        return value
    return f"t={value / per_second - EPOCH:g}"


def _shorten(value: Any, width: int) -> Any:
    text = value if isinstance(value, str) else None
    if text is not None and len(text) > width:
        return text[: width - 1] + "…"
    return value


def late_frame(runs: Iterable[expiry.LateRun]) -> pd.DataFrame:
    """One row per late-duplicate run: the record's life, the copy's arrival, what it did."""
    return pd.DataFrame([run.row() for run in runs])


def _object_name(text: str) -> str:
    """An object's name from `s3://bucket/name?versionId=...` or `bucket/name#version`: the
    part a person reads, so a report's cells fit the page uncut. A record keyed per order
    (`account#order#ID`, keyed_orders.OrderRef) reads as `order ID`."""
    if "#order#" in text:
        return "order " + text.split("#order#", 1)[1]
    text = text.removeprefix("s3://").split("?", 1)[0].split("#", 1)[0]
    return text.split("/", 1)[1] if "/" in text else text


def report_frame(report: Any) -> pd.DataFrame:
    """The reconciliation report (idem.core.reconcile.audit.Report), one finding a row, each cell short
    enough to show whole (pandas cuts a cell at 50 characters)."""
    rows = [{"finding": "missing work", "what": _object_name(m.object),
             "detail": f"no done record and no charge (record: {m.record})"} for m in report.missing]
    rows += [{"finding": "stuck record", "what": _object_name(s.source or s.key),
              "detail": f"in_progress, lease ended {s.overdue_seconds:.0f} s ago"} for s in report.stuck]
    rows += [{"finding": "double charge", "what": _object_name(d.reference),
              "detail": f"{len(d.charge_ids)} charges: {', '.join(d.charge_ids)}"}
             for d in report.double_charges]
    rows += [{"finding": "account mismatch", "what": f"account {a.account}",
              "detail": f"provider {a.provider_charges} ({a.provider_cents} cents), "
                        f"ledger {a.ledger_charges} ({a.ledger_cents} cents)"} for a in report.mismatches]
    return pd.DataFrame(rows, columns=["finding", "what", "detail"])


def footprints_frame(counts: dict[str, int]) -> pd.DataFrame:
    """The footprint counts (idem.lessons.auditing.batches.footprints) as a one-column table."""
    return pd.DataFrame({"count": counts}).rename_axis("footprint")


def rows_frame(rows: Iterable[Any]) -> pd.DataFrame:
    """A table from a list of dataclass rows (or dicts), one column per field."""
    return pd.DataFrame([r if isinstance(r, dict) else dict(vars(r)) for r in rows])


def fields_frame(obj: Any) -> pd.DataFrame:
    """One dataclass (or dict) as a two-column table, one row per field: `field`, `value`."""
    fields = obj if isinstance(obj, dict) else vars(obj)
    return Whole([{"field": k, "value": v} for k, v in fields.items()], columns=["field", "value"])


def items_by_handler(outcomes: Iterable[sc.Outcome]) -> pd.DataFrame:
    """What each run left in its ledger table (`compact_items`), the runs one after another, each
    row labelled with the run's handler."""
    rows = [dict(row, handler=o.scenario.handler)
            for o in outcomes for row in compact_items(o.items).to_dict("records")]
    return Whole(rows, columns=["handler", "item", "status", "holds"])


# -- chapter 11: a check's report ------------------------------------------------------------
def verdicts_frame(reports: Mapping[str, Any]) -> pd.DataFrame:
    """Schedules per verdict, one column per check report (`idem.explore.report.check_report.CheckReport`), breaks marked.

    Verdicts run in the check's order; a verdict no report has is left out.
    """
    tallies = {name: report.tally() for name, report in reports.items()}
    shown = [v for v in VERDICTS if any(v in tally for tally in tallies.values())]
    frame = pd.DataFrame({name: [tally.get(v, 0) for v in shown] for name, tally in tallies.items()},
                         index=pd.Index(shown, name="verdict"))
    frame["break?"] = ["BREAK" if v in BREAKS else "" for v in shown]
    return frame


def schedule_frame(result: Any) -> pd.DataFrame:
    """One schedule of a check (`idem.explore.judge.result.Result`), a row per boundary crossed: when, by which
    invocation, where, what was injected there, and how the invocation ended (on its last row)."""
    rows = []
    for a in result.attempts:
        crossings = a.crossings or [None]
        for n, crossing in enumerate(crossings):
            last = n == len(crossings) - 1
            rows.append({"t (s)": a.start if crossing is None else crossing.t,
                         "delivery": a.delivery, "attempt": a.attempt,
                         "boundary": "-" if crossing is None else str(crossing.boundary),
                         "injected": (crossing.failed if crossing else "") or "",
                         "ended": a.outcome if last else ""})
    frame = pd.DataFrame(rows, columns=["t (s)", "delivery", "attempt", "boundary", "injected", "ended"])
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="step")
    return frame
