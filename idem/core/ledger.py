"""The ledger: one DynamoDB table holding the charge entries and the idempotency records.

Item shapes (partition key `pk` only):
- `account#<name>`: the ledger entry of claim-first and robust: `charges` and `cents` counters.
- `charge#<recipe>#<digest>`: an idempotency record: `status`, `owner`, `lease_until`,
  `expires_at` (the table's TTL attribute), `result`, `source` (what the key was made from).
  Keyed's done record is also its ledger line: `account`, `cents`, `charge_id`, `booked_at`,
  and no `expires_at`; the sparse index `by_account` holds these lines only.

This module holds what claim-first and robust do with the table, and the reads that the
chapters and the reconciliation job make. The keyed handler's claim and commit live in
`handlers/keyed.py` (`KeyedLedger`), with the one shape every claim answers in: a `Claim`.
"""
from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from .clock import Clock
from .dynamo import condition_failed, from_item, to_item, values
from .handlers.keyed import Claim, Record, Status
from .handlers.keyed_settings import DAY

#: Key prefixes of the items in the ledger table that are not idempotency records.
NOT_RECORDS = ("account", "demo-failure")  # demo-failure: chapter 09's arrival counts
#: The sparse index of keyed's ledger lines (partition key `account`, sort key `booked_at`; template.yaml).
BOOKS_INDEX = "by_account"


def booked_totals(client: Any, table: str, account: str) -> tuple[int, int]:
    """(charges, cents) keyed booked for an account, from the sparse index (eventually consistent)."""
    pages = client.get_paginator("query").paginate(
        TableName=table, IndexName=BOOKS_INDEX, KeyConditionExpression="account = :account",
        ExpressionAttributeValues=values(account=account))
    lines = [item for page in pages for item in page["Items"]]
    return len(lines), sum(int(item["cents"]["N"]) for item in lines)


class Ledger:
    def __init__(self, client: Any, table: str, clock: Clock, ttl_seconds: int = DAY) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.ttl_seconds = ttl_seconds

    def _expires_at(self) -> int:
        return int(self.clock.now()) + self.ttl_seconds

    def put_if_absent(self, key: str, status: Status, source: str) -> Claim:
        """One conditional put: write the record only if the key has none."""
        try:
            self.client.put_item(
                TableName=self.table,
                Item=to_item({"pk": key, "status": status.value, "source": source,
                              "created_at": self.clock.now(), "expires_at": self._expires_at()}),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if condition_failed(error):
                return Claim(won=False)
            raise
        return Claim(won=True)

    # -- claim_first: one conditional put, the record says only "seen" ---------------
    def claim_once(self, key: str, source: str = "") -> Claim:
        """Put the key if absent: won if this call put it."""
        return self.put_if_absent(key, Status.CLAIMED, source)

    # -- robust, as it is usually written: get, then conditional put, then mark done --
    def get_record(self, key: str) -> Record | None:
        item = self.client.get_item(TableName=self.table, Key=to_item({"pk": key}),
                                    ConsistentRead=True).get("Item")
        return Record.from_item(item) if item else None

    def put_in_progress(self, key: str, source: str = "") -> Claim:
        """Write `in_progress`, only if no record exists: lost if a concurrent copy got there first."""
        return self.put_if_absent(key, Status.IN_PROGRESS, source)

    def mark_done(self, key: str, result: Any = None) -> None:
        """Write `done`, unconditionally: over whatever the record holds, even another copy's `done`."""
        self.client.update_item(
            TableName=self.table,
            Key=to_item({"pk": key}),
            UpdateExpression="SET #s = :done, #r = :result",
            ExpressionAttributeNames={"#s": "status", "#r": "result"},
            ExpressionAttributeValues=values(done=Status.DONE.value, result=result or {}),
        )

    # -- the ledger entry: the system's own record of a charge -----------------------
    def _entry_update(self, account: str, cents: int) -> dict[str, Any]:
        return {"Update": {
            "TableName": self.table,
            "Key": to_item({"pk": f"account#{account}"}),
            "UpdateExpression": "ADD charges :one, cents :cents",
            "ExpressionAttributeValues": values(one=1, cents=cents),
        }}

    def add_entry(self, account: str, cents: int) -> None:
        """Write one charge into the account's ledger entry (not idempotent by itself)."""
        update = self._entry_update(account, cents)["Update"]
        self.client.update_item(**update)

    # -- reading the table back (for chapters, the auditor and tests) ---------------
    def items(self) -> list[dict[str, Any]]:
        """Every item in the table, plain values, sorted by key."""
        found: list[dict[str, Any]] = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.table, ConsistentRead=True):
            found.extend(from_item(item) for item in page["Items"])
        return sorted(found, key=lambda item: item["pk"])

    def records(self) -> list[Record]:
        return [Record.from_item(to_item(item)) for item in self.items()
                if item["pk"].split("#")[0] not in NOT_RECORDS]

    def entry(self, account: str) -> tuple[int, int]:
        """(charges, cents) the ledger holds for an account: the counter entry claim-first and
        robust keep, plus keyed's ledger lines (a query on the sparse index)."""
        item = from_item(self.client.get_item(
            TableName=self.table, Key=to_item({"pk": f"account#{account}"}),
            ConsistentRead=True).get("Item")) or {}
        lines = booked_totals(self.client, self.table, account)
        return item.get("charges", 0) + lines[0], item.get("cents", 0) + lines[1]


def booked(items: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """account -> (charges, cents) the ledger holds, from a scan's plain items: the counter
    entries (`account#<name>`) and keyed's ledger lines (done records that carry an account)."""
    books: dict[str, tuple[int, int]] = {}
    for item in items:
        if item["pk"].startswith("account#"):
            if "charges" not in item and "cents" not in item:  # only the customer mapping (idem.core.customers)
                continue
            account = item["pk"].removeprefix("account#")
            charges, cents = int(item.get("charges", 0)), int(item.get("cents", 0))
        elif item.get("account") and item.get("charge_id") and item.get("status") == Status.DONE.value:
            account, charges, cents = item["account"], 1, int(item.get("cents", 0))
        else:
            continue
        before = books.get(account, (0, 0))
        books[account] = (before[0] + charges, before[1] + cents)
    return books
