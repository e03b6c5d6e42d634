"""Views for the first chapters: a run's result in the columns a reader needs first, a timeline
with a legend for its marks, an explorer that shows both (chapter 01); what a lost conditional
put hands back and what taking a piece of work costs (chapter 02)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display
from botocore.exceptions import ClientError

from ..core.dynamo import from_item, to_item
from ..core.ledger import Ledger
from ..local import scenarios as sc
from ..local.boundary import calls_made, watched_session
from ..local.runtime import Attempt
from . import charts, tables
from .widgets import FAULTS, make_explorer, pinned, run_scenario

#: What a run did, one column a count (tables.OUTCOME_COLUMNS says what each counts).
RESULT_COLUMNS = ("handler", "charges", "ledger_charges", "invocations", "in_failure_queue",
                  "dynamodb_calls", "verdict")
OUTCOME_LABELS = charts.OUTCOME_LABELS
MONEY_COLOUR = "#b8860b"  # charts.timeline writes the label of an invocation that charged in it


def result_frame(outcomes: Iterable[sc.Outcome]) -> pd.DataFrame:
    """One row per run: the handler, then what the run counted, then the verdict."""
    return tables.outcome_frame(outcomes)[list(RESULT_COLUMNS)]


def labelled_timeline(run: sc.Outcome | Iterable[Attempt], title: str | None = None) -> Any:
    """`charts.timeline`, whose figure carries a legend for every mark and colour it draws."""
    return charts.timeline(run, title)


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


# -- chapter 02: what a lost conditional put hands back, and what claiming costs ---------------
def lost_put(world: Any, key: str, holder: str, loser: str = "second-invocation") -> dict[str, Any]:
    """Put `key` for `holder`, then again for `loser`, both with attribute_not_exists(pk) and
    ALL_OLD; return what the loser's failed put gets back (without the transport metadata)."""
    request = dict(TableName=world.ledger_table, ConditionExpression="attribute_not_exists(pk)",
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")
    world.dynamodb.put_item(Item=to_item({"pk": key, "status": "claimed", "owner": holder}), **request)
    try:
        world.dynamodb.put_item(Item=to_item({"pk": key, "status": "claimed", "owner": loser}), **request)
    except ClientError as error:
        return {k: v for k, v in error.response.items() if k != "ResponseMetadata"}
    raise AssertionError("the second conditional put succeeded: the table is not enforcing conditions")


@dataclass(frozen=True)
class ClaimCost:
    approach: str
    winner_calls: int  # DynamoDB calls the copy that takes the work makes to take it
    duplicate_calls: int  # DynamoDB calls a duplicate makes before it stands down
    duplicate_learns: str  # what the duplicate knows afterwards


def claim_costs(world: Any) -> list[ClaimCost]:
    """Three ways to take one piece of work, each tried twice on a fresh key (the winner, then a
    duplicate), with the DynamoDB calls each try made counted where they leave the process."""
    client = watched_session().client("dynamodb")
    ledger = Ledger(client, world.ledger_table, world.clock)
    rows: list[ClaimCost] = []

    def measure(approach: str, take: Callable[[str, str], str]) -> None:
        key = f"charge#cost#{len(rows)}"
        _, first = calls_made(lambda: take(key, "invocation-a"))
        learned, again = calls_made(lambda: take(key, "invocation-b"))
        rows.append(ClaimCost(approach, first, again, learned))

    def conditional_put(key: str, _: str) -> str:
        return f"won={ledger.claim_once(key).won}, nothing else"

    def with_all_old(key: str, owner: str) -> str:
        try:
            client.put_item(TableName=world.ledger_table, Item=to_item({"pk": key, "status": "claimed",
                                                                        "owner": owner}),
                            ConditionExpression="attribute_not_exists(pk)",
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return f"won=False, owner={from_item(error.response['Item'])['owner']}"
        return "won=True"

    def read_then_put(key: str, _: str) -> str:
        record = ledger.get_record(key)
        if record is None:
            return f"won={ledger.claim_once(key).won}"
        return f"status={record.status} (from the read)"

    measure("conditional put", conditional_put)
    measure("conditional put, ALL_OLD", with_all_old)
    measure("read, then conditional put", read_then_put)
    return rows
