"""The reconciliation's ledger side: a window's lines by Query of the day index (never a Scan),
a record or an account's customer mapping by key, and the job's cursor (an item of the ledger)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from botocore.exceptions import ClientError

from ..dynamo import from_item, to_item, values
from .report import Entry, day_of

#: The ledger's time-bucketed index of done lines: partition `booked_day` (the UTC day of
#: `booked_at`, YYYY-MM-DD), sort `booked_at`. Sparse: only a commit writes `booked_day`. One
#: partition per day spreads the writes (100,000 a day is ~1.2 a second, far under a partition's
#: 1,000 write units a second: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html)
#: and a window's lines are one Query per day it touches.
DAY_INDEX = "by_day"
DAY_INDEX_ATTRIBUTES = ("account", "cents", "charge_id", "source")  # projected besides the keys
#: The cursor: an item of the ledger table (no `account`, `booked_day` or `expires_at`: it enters
#: no index and TTL never deletes it).
CURSOR_KEY = "reconcile#cursor"


def days(start: float, end: float) -> list[str]:
    """The UTC days [start, end) touches, oldest first."""
    found, t = [], float(int(start) // 86400 * 86400)
    while t < end:
        found.append(day_of(t))
        t += 86400
    return found


def ledger_lines(dynamodb: Any, table: str, start: float, end: float) -> list[Entry]:
    """Done lines booked in [start, end): one Query of the day index per day, every page."""
    found = []
    for day in days(start, end):
        pages = dynamodb.get_paginator("query").paginate(
            TableName=table, IndexName=DAY_INDEX,
            KeyConditionExpression="booked_day = :day AND booked_at BETWEEN :start AND :end",
            ExpressionAttributeValues=values(day=day, start=start, end=end))
        for page in pages:
            for item in map(from_item, page["Items"]):
                assert item is not None
                if float(item["booked_at"]) < end:  # BETWEEN includes its end; the window does not
                    found.append(Entry(str(item.get("charge_id", "")), str(item.get("account", "")),
                                       int(item.get("cents", 0)), float(item["booked_at"]), str(item["pk"])))
    return found


#: The index's partition of records left `pending` (a charge Stripe had not settled: a commit writes
#: `booked_day` = PENDING_DAY and `booked_at` = when; a booking moves it to its day, a decline or release removes it).
PENDING_DAY = "pending"


def pending_before(dynamodb: Any, table: str, before: float) -> list[Entry]:
    """The records still `pending` since before `before`, oldest first: one Query of the index's
    PENDING_DAY partition, every page (only such records: the sweep of charges left unsettled)."""
    found = []
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table, IndexName=DAY_INDEX, KeyConditionExpression="booked_day = :day AND booked_at < :before",
        ExpressionAttributeValues=values(day=PENDING_DAY, before=before))
    for page in pages:
        for item in map(from_item, page["Items"]):
            assert item is not None
            found.append(Entry(str(item.get("charge_id", "")), "", int(item.get("cents", 0)),
                               float(item["booked_at"]), str(item["pk"])))
    return found


def record_status(dynamodb: Any, table: str, key: str) -> tuple[str, Mapping[str, Any]]:
    """A record's status and result, read by key ("" when there is none): one GetItem, made only
    for an upload whose line the window's Query did not find."""
    item = from_item(dynamodb.get_item(TableName=table, Key=to_item({"pk": key}), ConsistentRead=True,
                                       ProjectionExpression="#s, #r",
                                       ExpressionAttributeNames={"#s": "status", "#r": "result"}).get("Item"))
    if not item:
        return "", {}
    result = item.get("result")
    return str(item.get("status", "")), result if isinstance(result, dict) else {}


#: The customer mapping: one item per account, `account#<ACCOUNT>` with `customer` (cus_...),
#: written only by `idem customers link` (BRIEF decision 2, docs/money_contract.md): the trusted
#: source of who pays for an account's orders.
MAPPING_PREFIX = "account#"


def read_items(dynamodb: Any, table: str, keys: Iterable[str], attributes: Iterable[str]) -> dict[str, Mapping[str, Any]]:
    """Items by `pk` (absent keys left out), `attributes` of each: one GetItem a key, eventually
    consistent (the job reads a window hours after it closed). (BatchGetItem would read 100 a
    call; moto's IAM enforcement, which tests the role, refuses it, so the job keeps GetItem.)"""
    names = {f"#a{n}": name for n, name in enumerate(["pk", *attributes])}
    found: dict[str, Mapping[str, Any]] = {}
    for key in sorted(set(keys)):
        item = from_item(dynamodb.get_item(TableName=table, Key=to_item({"pk": key}),
                                           ProjectionExpression=", ".join(names),
                                           ExpressionAttributeNames=names).get("Item"))
        if item:
            found[key] = item
    return found


def line_terms(dynamodb: Any, table: str,
               lines: Iterable[Entry]) -> tuple[dict[str, tuple[str, str]], dict[str, str | None]]:
    """For booked lines: each one's customer and currency (the day index projects neither), by
    its key; and each account's mapped customer (None: the account has no mapping)."""
    lines = list(lines)
    accounts = {line.account for line in lines if line.account}
    items = read_items(dynamodb, table, [line.key for line in lines] + [MAPPING_PREFIX + a for a in accounts],
                       ("kind", "customer", "currency"))
    terms = {line.key: (str(items.get(line.key, {}).get("customer") or ""),
                        str(items.get(line.key, {}).get("currency") or "").lower()) for line in lines}
    mapped: dict[str, str | None] = {}
    for account in accounts:
        item = items.get(MAPPING_PREFIX + account, {})
        mapped[account] = str(item["customer"]) if item.get("kind") == "customer" and item.get("customer") else None
    return terms, mapped


def backfill_booked_day(dynamodb: Any, table: str) -> int:
    """Once, after adding the day index to a ledger that has lines already: give every done line
    its `booked_day`, so the index holds it. (A Scan, run by a person once; the job never scans.)
    Returns how many lines were updated."""
    updated = 0
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table, ConsistentRead=True,
        FilterExpression="attribute_exists(booked_at) AND attribute_not_exists(booked_day)",
        ProjectionExpression="pk, booked_at")
    for page in pages:
        for item in map(from_item, page["Items"]):
            assert item is not None
            try:
                dynamodb.update_item(TableName=table, Key=to_item({"pk": item["pk"]}),
                                     UpdateExpression="SET booked_day = :day",
                                     ConditionExpression="attribute_exists(pk)",
                                     ExpressionAttributeValues=values(day=day_of(float(item["booked_at"]))))
                updated += 1
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
    return updated


# -- the cursor ---------------------------------------------------------------------------------
def _cursor_item(dynamodb: Any, table: str) -> Mapping[str, Any]:
    return from_item(dynamodb.get_item(TableName=table, Key=to_item({"pk": CURSOR_KEY}),
                                       ConsistentRead=True).get("Item")) or {}


def read_cursor(dynamodb: Any, table: str) -> float | None:
    """Where the last run stopped: the start of the next window to reconcile (None: never ran)."""
    item = _cursor_item(dynamodb, table)
    return float(item["next_start"]) if "next_start" in item else None


#: The cursor item's mark, once a run found the upload bucket past MAX_LISTED_VERSIONS: the
#: bucket only grows (each order keeps its current version), so every later run reads S3 Inventory.
INVENTORY_MARK = "uploads_from"


def reads_inventory(dynamodb: Any, table: str) -> bool:
    """Has a run found the upload bucket too big to list (`mark_inventory`)?"""
    return _cursor_item(dynamodb, table).get(INVENTORY_MARK) == "inventory"


def mark_inventory(dynamodb: Any, table: str) -> None:
    """Every run from now on reads the uploads from S3 Inventory (the cursor item, which is the
    only ledger item the role may write)."""
    dynamodb.update_item(TableName=table, Key=to_item({"pk": CURSOR_KEY}), UpdateExpression="SET #m = :inventory",
                         ExpressionAttributeNames={"#m": INVENTORY_MARK},
                         ExpressionAttributeValues=values(inventory="inventory"))


def advance_cursor(dynamodb: Any, table: str, before: float | None, after: float) -> bool:
    """Move the cursor from `before` to `after`, only if no other run moved it meanwhile."""
    condition = "attribute_not_exists(next_start)" if before is None else "next_start = :before"
    named = {"after": after, **({} if before is None else {"before": before})}
    try:
        dynamodb.update_item(TableName=table, Key=to_item({"pk": CURSOR_KEY}),
                             UpdateExpression="SET next_start = :after", ConditionExpression=condition,
                             ExpressionAttributeValues=values(**named))
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise

