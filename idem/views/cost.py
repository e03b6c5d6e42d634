"""What each pattern costs on DynamoDB's bill: chapter 08's tables and chart, and the meter's
small experiments for its exercise.

The numbers come from `idem.local.bill` (one upload per handler and case, every request the
function makes priced by `idem.local.capacity`'s on-demand rules); this module only shows them.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

import matplotlib.pyplot as plt
import pandas as pd

from ..local.capacity import US_EAST_1, CapacityRecorder, OnDemandPrice

#: The cases `idem.local.bill` measures, as a reader would name them, and their colours.
CASE_LABELS = {"first": "first delivery", "duplicate": "duplicate delivery",
               "retry": "retry after after_charge"}
CASE_COLOURS = {"first": "#1565c0", "duplicate": "#90caf9", "retry": "#ef6c00"}


def bill_frame(bills: Iterable[Any]) -> pd.DataFrame:
    """One row per handler and case: calls, write and read request units, dollars per million."""
    return pd.DataFrame([{
        "handler": b.handler, "case": b.case, "DynamoDB calls": b.calls,
        "write units": b.wru, "read units": b.rru, "USD per million uploads": b.dollars_per_million,
    } for b in bills])


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
    return (f"on-demand prices, {price.region}, read as current on {price.as_of}: "
            f"${price.usd_per_million_wru:g} per million write units, "
            f"${price.usd_per_million_rru:g} per million read units ({price.source})")


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
