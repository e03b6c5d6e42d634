"""What each pattern costs on DynamoDB's bill: chapter 08's tables and charts, and the meter's
small experiments for its exercise.

The numbers come from `idem.cost.bill` (one upload per handler and case, every request the
function makes priced by `idem.cost.capacity`'s on-demand rules) and from
`idem.cost.commit_designs` (keyed's commit, designed three ways). This module shows them, and
itemises a first delivery request by request (`itemise_designs`) with the same meter.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import pandas as pd

from ..core.handlers.keyed import KeyedLedger
from ..cost import commit_designs
from ..cost.capacity import US_EAST_1, OnDemandPrice
from ..cost.recorder import CapacityRecorder
from ..lessons.answers import not_yet, unfilled
from ..sim.world import LocalWorld

#: The cases `idem.cost.bill` measures, as a reader would name them, and their colours.
CASE_LABELS = {"first": "first delivery", "duplicate": "duplicate delivery",
               "retry": "retry after after_charge"}
CASE_COLOURS = {"first": "#1565c0", "duplicate": "#90caf9", "retry": "#ef6c00"}


def bill_frame(bills: Iterable[Any]) -> pd.DataFrame:
    """One row per handler and case: calls, write and read request units, dollars per million."""
    return pd.DataFrame([{
        "handler": b.handler, "case": b.case, "DynamoDB calls": b.calls,
        "write units": b.wru, "read units": b.rru, "USD per million uploads": b.dollars_per_million,
    } for b in bills])


def bill_summary(bills: Iterable[Any]) -> pd.DataFrame:
    """`bill_frame` on one row per handler: for each case, its calls, its write (W) and read (R)
    request units, and dollars per million uploads, in one cell."""
    bills = list(bills)
    cells: dict[str, dict[str, str]] = {}
    for b in bills:
        calls = f"{b.calls} call" + ("s" if b.calls != 1 else "")
        cells.setdefault(b.handler, {})[b.case] = f"{calls}, {b.wru:g} W + {b.rru:g} R, ${b.dollars_per_million:.3f}"
    frame = pd.DataFrame.from_dict(cells, orient="index")
    frame.index.name = "handler"
    frame = frame[[c for c in CASE_LABELS if c in frame.columns]]
    return frame.rename(columns=CASE_LABELS)


def units_table(bills: Iterable[Any], units: str = "wru") -> pd.DataFrame:
    """Request units of one kind (`wru` or `rru`) per upload, a handler per row, a case per column."""
    frame = pd.DataFrame([{"handler": b.handler, "case": b.case, "units": getattr(b, units)}
                          for b in bills])
    table = frame.pivot(index="handler", columns="case", values="units")
    order = list(dict.fromkeys(frame["handler"]))
    return table.loc[order, [c for c in CASE_LABELS if c in table.columns]]


def bill_chart(bills: Iterable[Any], title: str = "What one upload costs on DynamoDB's bill") -> Any:
    """Grouped bars: write units (left) and read units (right) per handler, a bar per case."""
    bills = list(bills)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [3, 2]})
    for ax, units, label in ((axes[0], "wru", "write request units"),
                             (axes[1], "rru", "read request units")):
        table = units_table(bills, units)
        width = 0.8 / len(table.columns)
        for n, case in enumerate(table.columns):
            xs = [x + (n - (len(table.columns) - 1) / 2) * width for x in range(len(table))]
            bars = ax.bar(xs, table[case], width, color=CASE_COLOURS[case], label=CASE_LABELS[case])
            ax.bar_label(bars, fmt="%g", fontsize=7, padding=1)
        ax.set_xticks(range(len(table)), table.index, rotation=20, fontsize=8)
        ax.set_ylabel(f"{label} per upload", fontsize=9)
        ax.set_ylim(0, max(1.0, float(table.to_numpy().max())) * 1.2)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8,
               bbox_to_anchor=(0.5, 0.93), frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.86))
    return fig


def price_note(price: OnDemandPrice = US_EAST_1) -> str:
    """The price the dollars use: region, figures, the date they were read as current, the page."""
    return (f"on-demand prices, {price.region}: ${price.usd_per_million_wru:g} per million write units, "
            f"${price.usd_per_million_rru:g} per million read units\n"
            f"read as current on {price.as_of} ({price.source})")


# -- keyed's commit, three designs ----------------------------------------------------------------
#: The parts of a first delivery's write units, and their colours.
PART_COLOURS = {"claim": "#90caf9", "commit": "#1565c0", "index entry": "#ef6c00"}


def designs_frame(costs: Iterable[Any]) -> pd.DataFrame:
    """`commit_designs` side by side: a design per column, a measure per row."""
    costs = list(costs)
    lines = costs[0].lines if costs else 0
    rows = {
        "write units, first delivery": [c.wru_first for c in costs],
        "write units, duplicate": [c.wru_duplicate for c in costs],
        "USD per million uploads": [c.usd_per_million for c in costs],
        "an account's totals read by": [c.totals_by for c in costs],
        f"read units for those totals ({lines} lines)": [c.totals_rru for c in costs],
    }
    return pd.DataFrame(rows, index=[c.design for c in costs]).T


def _plain_table(world: LocalWorld) -> str:
    name = f"{world.ledger_table}-plain"
    world.dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    return name


def itemise_design(design: Any) -> list[dict[str, Any]]:
    """A first delivery under one commit design, request by request: the claim, the commit's
    own writes, and what the commit wrote into the index (each metered as DynamoDB bills it)."""
    with LocalWorld(prefix="itemise") as world:
        table = world.ledger_table if design.indexed else _plain_table(world)
        try:
            ledger = KeyedLedger(world.dynamodb, table, now=world.clock.now)
            with CapacityRecorder(world.dynamodb) as meter:
                claim = ledger.claim("charge#0", "owner-0", world.clock.now() + 30)
                design.commit(ledger, claim.mine, "ch_000000")
        finally:
            if table != world.ledger_table:
                world.dynamodb.delete_table(TableName=table)
    claim, commit = meter.requests
    items = len(commit.item_bytes)
    return [
        {"commit design": design.name, "part": "claim", "request": claim.operation,
         "write units": claim.wru},
        {"commit design": design.name, "part": "commit",
         "request": f"{commit.operation} of {items} item{'s' if items > 1 else ''}",
         "write units": commit.wru - commit.index_wru},
        {"commit design": design.name, "part": "index entry", "request": "",
         "write units": commit.index_wru},
    ]


def itemise_designs(designs: Iterable[Any] = commit_designs.DESIGNS) -> pd.DataFrame:
    """`itemise_design` for every design, one row per part."""
    return pd.DataFrame([row for design in designs for row in itemise_design(design)])


def receipt_lines(parts: pd.DataFrame) -> list[str]:
    """One entry per design: its name, then on the next line its parts' write units, added up."""
    lines = []
    for design, rows in parts.groupby("commit design", sort=False):
        paid = [f"{row['part']} ({row['request']}) {row['write units']:g}" if row["request"]
                else f"{row['part']} {row['write units']:g}"
                for _, row in rows.iterrows() if row["write units"]]
        lines.append(f"{design}:\n  {' + '.join(paid)} = {rows['write units'].sum():g} write units")
    return lines


def designs_chart(parts: pd.DataFrame,
                  title: str = "keyed's first delivery: write units by commit design") -> Any:
    """A horizontal bar per design, stacked by part (claim, commit, index entry)."""
    designs = list(dict.fromkeys(parts["commit design"]))
    fig, ax = plt.subplots(figsize=(9, 0.8 + 0.6 * len(designs)))
    for y, design in enumerate(designs):
        left = 0.0
        for _, row in parts[parts["commit design"] == design].iterrows():
            units = float(row["write units"])
            if units:
                ax.barh(y, units, left=left, color=PART_COLOURS[row["part"]], edgecolor="white")
                ax.text(left + units / 2, y, f"{units:g}", ha="center", va="center", fontsize=8,
                        color="white" if row["part"] == "commit" else "black")
            left += units
    ax.set_yticks(range(len(designs)), designs, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("write request units per first delivery", fontsize=9)
    ax.legend(handles=[Patch(color=colour, label=part) for part, colour in PART_COLOURS.items()],
              loc="lower right", fontsize=8)  # one entry per colour
    _ = ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# -- the meter on single requests (the exercise) ---------------------------------------------------
#: The three requests `meter_examples` makes, in order.
EXAMPLES = ("put a 2.5 KB item", "put it again, condition failing",
            "transaction putting two 600-byte items")
KB = 1024


def sized_item(name: str, size_bytes: int) -> dict[str, Any]:
    """An item of exactly `size_bytes` bytes as DynamoDB sizes it: a key `pk` and a `body`."""
    pad = size_bytes - len("pk") - len(name) - len("body")
    if pad < 0:
        raise ValueError(f"{size_bytes} bytes is too small for an item named {name!r}")
    return {"pk": {"S": name}, "body": {"S": "x" * pad}}


@contextlib.contextmanager
def scratch_table(client: Any, name: str = "meter-scratch") -> Iterator[str]:
    """An empty on-demand table with a string key `pk`, deleted afterwards."""
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    try:
        yield name
    finally:
        client.delete_table(TableName=name)


def meter_examples(client: Any) -> dict[str, float]:
    """Write units of the three EXAMPLES, each request metered as DynamoDB bills it."""
    with scratch_table(client) as table, CapacityRecorder(client) as meter:
        big = sized_item("order#big", int(2.5 * KB))
        client.put_item(TableName=table, Item=big)
        try:
            client.put_item(TableName=table, Item=big, ConditionExpression="attribute_not_exists(pk)")
        except client.exceptions.ConditionalCheckFailedException:
            pass  # the condition failed, as intended: the meter still saw the request
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": table, "Item": sized_item(f"order#small{n}", 600)}} for n in (1, 2)])
    return {label: request.wru for label, request in zip(EXAMPLES, meter.requests)}


#: A wrong prediction's hint for each of chapter 08's exercise requests: a question that points
#: to the rule of the chapter's list it missed, without stating the rule or the number.
EXAMPLE_HINTS = {
    "put a 2.5 KB item": "A write unit covers 1 KB: what becomes of the half KB left over?",
    "put it again, condition failing": "Is a write whose condition fails free, and whose size "
                                       "does it bill on?",
    "transaction putting two 600-byte items": "Does each item round on its own, and how many times "
                                              "does a transaction bill each one?",
}


def check_units(prediction: dict[str, float | None], client: Any) -> str:
    """Chapter 08's exercise: the predicted write units of each EXAMPLES request against the
    meter's, one line each. A wrong prediction gets a question that points to the rule it
    missed; neither the rule nor the number."""
    missing = [request for request in EXAMPLES if request not in prediction]
    if missing:
        return f"Predict every request: {', '.join(missing)} has no prediction."
    if unfilled(prediction):
        return not_yet("my_prediction holds no number: put a number of write units beside each request")
    lines = []
    for request, units in meter_examples(client).items():
        guess = prediction[request]
        if unfilled(guess):
            lines.append(f"{request}: no prediction yet.")
        elif guess == units:
            lines.append(f"{request}: right, the meter says {units:g}.")
        else:
            whole = "" if float(guess).is_integer() else " Write units come in whole numbers."
            lines.append(f"{request}: not {guess:g}.{whole}\n  {EXAMPLE_HINTS[request]}")
    return "\n".join(lines)
