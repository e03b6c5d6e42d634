"""The ledger: one DynamoDB table holding the charge entries and the idempotency records.

Item shapes (partition key `pk` only):
- `account#<name>`: the ledger entry, `charges` and `cents` counters.
- `charge#<recipe>#<digest>`: an idempotency record: `status`, `owner`, `lease_until`,
  `expires_at` (the table's TTL attribute), `result`, `source` (what the key was made from).

Each claim method answers in one shape, a `Claim`: won, or lost to the record that holds
the key. Calls are not counted here: the local runtime counts every call at its boundary.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError

from .clock import Clock
from .dynamo import cancelled_by_condition, condition_failed, from_item, to_item, values
from .errors import LostOwnership

DAY = 24 * 60 * 60
#: Key prefixes of the items in the ledger table that are not idempotency records.
NOT_RECORDS = ("account", "entry", "faultcount")


class Status(str, Enum):
    CLAIMED = "claimed"  # claim_first: seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # robust, keyed: the work started
    DONE = "done"  # robust, keyed: the work finished

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Record:
    key: str
    status: Status
    owner: str = ""
    lease_until: float = 0.0
    expires_at: float = 0.0
    result: Any = None
    source: str = ""
    created_at: float = 0.0

    def expired(self, now: float) -> bool:
        """Expiry is checked here, in code: DynamoDB's TTL deletes items days late."""
        return bool(self.expires_at) and self.expires_at <= now

    def lease_live(self, now: float) -> bool:
        return self.status is Status.IN_PROGRESS and self.lease_until > now

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "Record":
        plain = from_item(item) or {}
        return cls(
            key=plain["pk"],
            status=Status(plain.get("status", Status.CLAIMED.value)),
            owner=plain.get("owner", ""),
            lease_until=plain.get("lease_until", 0),
            expires_at=plain.get("expires_at", 0),
            result=plain.get("result"),
            source=plain.get("source", ""),
            created_at=plain.get("created_at", 0),
        )


@dataclass(frozen=True)
class Claim:
    """The outcome of every claim: won, or lost to the existing record (when it was read)."""

    won: bool
    existing: Record | None = None


class Ledger:
    def __init__(self, client: Any, table: str, clock: Clock, ttl_seconds: int = DAY) -> None:
        self.client = client
        self.table = table
        self.clock = clock
        self.ttl_seconds = ttl_seconds

    def _expires_at(self) -> int:
        return int(self.clock.now()) + self.ttl_seconds

    def _put_if_absent(self, key: str, status: Status, source: str) -> Claim:
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
        return self._put_if_absent(key, Status.CLAIMED, source)

    # -- robust, as the article writes it: get, then conditional put, then mark done --
    def get_record(self, key: str) -> Record | None:
        item = self.client.get_item(TableName=self.table, Key=to_item({"pk": key}),
                                    ConsistentRead=True).get("Item")
        return Record.from_item(item) if item else None

    def put_in_progress(self, key: str, source: str = "") -> Claim:
        """Write `in_progress`, only if no record exists: lost if a concurrent copy got there first."""
        return self._put_if_absent(key, Status.IN_PROGRESS, source)

    def mark_done(self, key: str, result: Any = None) -> None:
        """Write `done`, unconditionally (as the article does)."""
        self.client.update_item(
            TableName=self.table,
            Key=to_item({"pk": key}),
            UpdateExpression="SET #s = :done, #r = :result",
            ExpressionAttributeNames={"#s": "status", "#r": "result"},
            ExpressionAttributeValues=values(done=Status.DONE.value, result=result or {}),
        )

    # -- keyed: put-first claim with a lease, and a commit fenced to the owner -------
    def claim(self, key: str, owner: str, lease_until: float, source: str = "") -> Claim:
        """Claim the key in one call, or learn who holds it.

        The put succeeds when there is no record, when the record has expired, or when
        an earlier invocation's lease ran out. Otherwise DynamoDB hands back the record
        (ReturnValuesOnConditionCheckFailure=ALL_OLD): a duplicate costs one call.
        """
        now = self.clock.now()
        try:
            self.client.put_item(
                TableName=self.table,
                Item=to_item({"pk": key, "status": Status.IN_PROGRESS.value, "owner": owner,
                              "lease_until": lease_until, "source": source,
                              "created_at": now, "expires_at": self._expires_at()}),
                ConditionExpression=(
                    "attribute_not_exists(pk) OR expires_at <= :now"
                    " OR (#s = :in_progress AND lease_until <= :now)"
                ),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=values(now=now, in_progress=Status.IN_PROGRESS.value),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if condition_failed(error) and "Item" in error.response:
                return Claim(won=False, existing=Record.from_item(error.response["Item"]))
            raise
        return Claim(won=True)

    def commit(self, key: str, owner: str, result: Any, account: str, cents: int,
               charge_id: str) -> None:
        """Mark the record done and book the charge, in one transaction, if we still own it.

        Raises LostOwnership when the lease passed to another invocation: a zombie's
        commit must not land over the new owner's. The charge is booked once per charge id
        (an `entry#<charge id>` item guards the account's counters): a duplicate that came
        back after its record expired, and got the provider's replay of the same charge,
        marks its record done without booking the money a second time.
        """
        done = {"Update": {
            "TableName": self.table,
            "Key": to_item({"pk": key}),
            "UpdateExpression": "SET #s = :done, #r = :result",
            "ConditionExpression": "#o = :me AND #s = :in_progress",
            "ExpressionAttributeNames": {"#s": "status", "#r": "result", "#o": "owner"},
            "ExpressionAttributeValues": values(
                done=Status.DONE.value, result=result or {}, me=owner,
                in_progress=Status.IN_PROGRESS.value),
        }}
        booked_once = {"Put": {
            "TableName": self.table,
            "Item": to_item({"pk": f"entry#{charge_id}", "account": account, "cents": cents,
                             "record": key, "booked_at": self.clock.now()}),
            "ConditionExpression": "attribute_not_exists(pk)",
        }}
        try:
            self.client.transact_write_items(
                TransactItems=[done, booked_once, self._entry_update(account, cents)])
        except ClientError as error:
            if cancelled_by_condition(error, 0):
                raise LostOwnership(key) from None
            if not cancelled_by_condition(error, 1):
                raise
            try:  # already booked: only the record is left to finish
                self.client.transact_write_items(TransactItems=[done])
            except ClientError as again:
                if cancelled_by_condition(again, 0):
                    raise LostOwnership(key) from None
                raise

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
        """(charges, cents) the ledger holds for an account."""
        item = from_item(self.client.get_item(
            TableName=self.table, Key=to_item({"pk": f"account#{account}"}),
            ConsistentRead=True).get("Item")) or {}
        return item.get("charges", 0), item.get("cents", 0)
