"""Three ways keyed could commit, each metered on the same claim and the same table (chapter 08).

Every design keeps the owner fence (only the claim's owner commits), books each charge once,
and changes the record and the books together (a transaction, or one item that is both).
They differ in what the commit writes and in how an account's totals are read:

- `transaction`: keyed's commit before issue 13. One TransactWriteItems of three items: the
  record becomes done, a booked-once entry `entry#<charge id>`, and an `account#<name>`
  counter. All or nothing, and every item billed twice.
- `put + sparse index`: keyed's commit now (`KeyedLedger.commit`). One owner-fenced
  conditional put replaces the claim with the ledger line; the line enters the `by_account`
  index (one more write), where totals are a query, and the `by_day` index the reconciliation
  reads (it carries `booked_day`: one more write), on the ledger table as template.yaml has it.
- `put, totals by scan`: the same put without the index; totals need a scan of the whole
  table, whose price grows with every record kept.

`measure()` runs each on a fresh table: the write units of a first delivery (claim and
commit) and of a duplicate (the failed claim), and the read units of one account's totals
once `lines` uploads are booked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.dynamo import to_item, values
from ..core.handlers.keyed import KeyedLedger, Record, Status
from ..core.ledger import BOOKS_INDEX, booked_totals
from ..sim.sessions import watched_session
from .capacity import dollars_per_million_uploads
from .recorder import CapacityRecorder
from ..sim.world import LEDGER_TABLE_SHAPE, LocalWorld

ACCOUNT = "alice"
CENTS = 500


@dataclass(frozen=True)
class DesignCost:
    design: str
    calls_first: int  # DynamoDB calls of a first delivery: the claim and the commit
    wru_first: float
    wru_duplicate: float
    totals_rru: float  # read units to read one account's totals with `lines` ledger lines
    lines: int
    totals_by: str  # how an account's totals are read

    @property
    def usd_per_million(self) -> float:
        return round(dollars_per_million_uploads(self.wru_first, 0.0), 4)

    def row(self) -> dict[str, Any]:
        return {"commit design": self.design, "calls, first delivery": self.calls_first,
                "write units, first delivery": self.wru_first,
                "write units, duplicate": self.wru_duplicate,
                "$ per million uploads": self.usd_per_million,
                "totals read by": self.totals_by,
                f"read units for one account's totals ({self.lines} lines)": self.totals_rru}


def transaction_commit(ledger: KeyedLedger, claimed: Record, charge_id: str) -> None:
    """keyed's commit before issue 13: three items in one transaction, each billed twice."""
    key, owner = claimed.key, claimed.owner
    done = {"Update": {
        "TableName": ledger.table, "Key": to_item({"pk": key}),
        "UpdateExpression": "SET #s = :done, #r = :result REMOVE expires_at",
        "ConditionExpression": "#o = :me AND #s = :in_progress",
        "ExpressionAttributeNames": {"#s": "status", "#r": "result", "#o": "owner"},
        "ExpressionAttributeValues": values(done=Status.DONE.value, result={"charge_id": charge_id},
                                            me=owner, in_progress=Status.IN_PROGRESS.value)}}
    booked_once = {"Put": {
        "TableName": ledger.table,
        "Item": to_item({"pk": f"entry#{charge_id}", "booked_for": ACCOUNT, "cents": CENTS, "record": key}),
        "ConditionExpression": "attribute_not_exists(pk)"}}
    totals = {"Update": {
        "TableName": ledger.table, "Key": to_item({"pk": f"account#{ACCOUNT}"}),
        "UpdateExpression": "ADD charges :one, cents :cents",
        "ExpressionAttributeValues": values(one=1, cents=CENTS)}}
    ledger.client.transact_write_items(TransactItems=[done, booked_once, totals])


def put_commit(ledger: KeyedLedger, claimed: Record, charge_id: str) -> None:
    """keyed's commit now: one owner-fenced put that replaces the claim with the ledger line."""
    ledger.commit(claimed, {"status": "charged", "charge_id": charge_id, "amount_cents": CENTS},
                  ACCOUNT, CENTS, charge_id)


def _totals_by_counter(ledger: KeyedLedger) -> None:
    ledger.client.get_item(TableName=ledger.table, Key=to_item({"pk": f"account#{ACCOUNT}"}))


def _totals_by_index(ledger: KeyedLedger) -> None:
    booked_totals(ledger.client, ledger.table, ACCOUNT)


def _totals_by_scan(ledger: KeyedLedger) -> None:
    for _ in ledger.client.get_paginator("scan").paginate(TableName=ledger.table):
        pass


@dataclass(frozen=True)
class Design:
    name: str
    commit: Callable[[KeyedLedger, Record, str], None]
    read_totals: Callable[[KeyedLedger], None]
    indexed: bool
    totals_by: str


DESIGNS = (
    Design("transaction + counter", transaction_commit, _totals_by_counter, False, "a counter item"),
    Design("put + sparse index (keyed)", put_commit, _totals_by_index, True, "a query on the index"),
    Design("put, totals by scan", put_commit, _totals_by_scan, False, "a scan of the table"),
)


def _table(world: LocalWorld, indexed: bool) -> str:
    """A ledger table shaped like the real one, with or without the index of ledger lines."""
    name = f"{world.ledger_table}-{'indexed' if indexed else 'plain'}"
    shape = dict(LEDGER_TABLE_SHAPE)
    if not indexed:
        shape = {"BillingMode": shape["BillingMode"], "KeySchema": shape["KeySchema"],
                 "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}
    world.dynamodb.create_table(TableName=name, **shape)
    return name


def measure_design(design: Design, lines: int = 40) -> DesignCost:
    """Meter one design: a first delivery, a duplicate, and the totals after `lines` uploads."""
    with LocalWorld(prefix="designs") as world:
        client = watched_session().client("dynamodb")
        table = _table(world, design.indexed)
        ledger = KeyedLedger(client, table, now=world.clock.now)
        upto = world.clock.now() + 30
        try:
            first, duplicate, totals = _meter(design, ledger, upto, lines)
        finally:
            world.dynamodb.delete_table(TableName=table)
    one = first.summary().total
    return DesignCost(design.name, int(one.calls), one.wru, duplicate.summary().total.wru,
                      totals.summary().total.rru, lines, design.totals_by)


def _meter(design: Design, ledger: KeyedLedger, upto: float,
           lines: int) -> tuple[CapacityRecorder, CapacityRecorder, CapacityRecorder]:
    client = ledger.client
    with CapacityRecorder(client) as first:
        claim = ledger.claim("charge#0", "owner-0", upto)
        design.commit(ledger, claim.mine, "ch_000000")
    with CapacityRecorder(client) as duplicate:
        ledger.claim("charge#0", "owner-copy", upto)
    for n in range(1, lines):
        claim = ledger.claim(f"charge#{n}", f"owner-{n}", upto)
        design.commit(ledger, claim.mine, f"ch_{n:06d}")
    with CapacityRecorder(client) as totals:
        design.read_totals(ledger)
    return first, duplicate, totals


def measure(lines: int = 40) -> list[DesignCost]:
    """Every design, side by side."""
    return [measure_design(design, lines) for design in DESIGNS]


__all__ = ["BOOKS_INDEX", "DESIGNS", "DesignCost", "measure", "measure_design"]
