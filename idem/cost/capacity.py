"""Capacity per request, from DynamoDB's own rules: what each call is billed, and what it costs.

Item sizes (`item_size`), write and read request units (`write_units`, `read_units`), a table's
indexes (`TableShape`), one request's bill (`RequestCost`), totals (`Units`, `CapacitySummary`)
and on-demand prices (`US_EAST_1`). `idem.cost.recorder.CapacityRecorder` applies them to every
request a boto3 DynamoDB client makes.

The rules, each next to the code that applies it, come from the DynamoDB Developer Guide.
The guide's current pages are cited by URL; where the wording matters, the text was read
from the awsdocs/amazon-dynamodb-developer-guide repository (archived, last content
2023-02-22) and the current pages' stored copies. Where AWS is silent or ambiguous, the
comment says so and names the assumption made.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Mapping


# -- the pages the rules come from ---------------------------------------------------------------
GUIDE = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
ITEM_SIZES = GUIDE + "CapacityUnitCalculations.html"  # "DynamoDB item sizes and formats"
#: Formerly ProvisionedThroughput.html#ItemSizeCalculations.Reads / .Writes.
READS_AND_WRITES = GUIDE + "read-write-operations.html"
REQUEST_UNITS = GUIDE + "HowItWorks.ReadWriteCapacityMode.html#HowItWorks.requests"
KB_IS_1024 = GUIDE + "Constraints.html"
QUERY_FILTERS = GUIDE + "Query.html#Query.FilterExpression"
TRANSACTIONS = GUIDE + "transaction-apis.html#transaction-capacity-handling"
GSI_WRITES = GUIDE + "GSI.html#GSI.ThroughputConsiderations.Writes"
GSI_READS = GUIDE + "HowItWorks.ReadConsistency.html"
TTL = GUIDE + "howitworks-ttl.html"
TTL_OVERVIEW = GUIDE + "TTL.html"
PRICING = "https://aws.amazon.com/dynamodb/pricing/on-demand/"

# -- units --------------------------------------------------------------------------------------
#: "All size measurements in DynamoDB use binary-based units. DynamoDB denotes 1 KB = 1024
#: bytes" (KB_IS_1024).
KB = 1024
#: "One write request unit represents one write for an item up to 1 KB in size" (REQUEST_UNITS).
WRITE_UNIT_BYTES = 1 * KB
#: "A strongly consistent read request of an item up to 4 KB requires one read request unit"
#: (REQUEST_UNITS).
READ_UNIT_BYTES = 4 * KB
#: "An eventually consistent read request of an item up to 4 KB requires one-half read request
#: unit" (REQUEST_UNITS).
EVENTUALLY_CONSISTENT = 0.5
#: "Transactional write requests require 2 write request units to perform one write for items up
#: to 1 KB"; "A transactional read request of an item up to 4 KB requires two read request units"
#: (REQUEST_UNITS). TRANSACTIONS: "DynamoDB performs two underlying reads or writes of every item in
#: the transaction: one to prepare the transaction and one to commit the transaction."
TRANSACTIONAL = 2
#: A failed conditional write on an item that does not exist: "For a new item, DynamoDB consumes one
#: write capacity unit" (READS_AND_WRITES, conditional writes).
ABSENT_ITEM_WRITE_UNITS = 1

# -- item sizes (ITEM_SIZES) --------------------------------------------------------------------
#: "An attribute of type List or Map requires 3 bytes of overhead, regardless of its contents."
LIST_OR_MAP_OVERHEAD = 3
#: "Each List or Map element also requires 1 byte of overhead."
ELEMENT_OVERHEAD = 1
#: "The size of a null attribute or a Boolean attribute is (name) + (1 byte)."
BOOL_OR_NULL_BYTES = 1
#: Numbers: "(1 byte per two significant digits) + (1 byte)".
NUMBER_OVERHEAD = 1
DIGITS_PER_BYTE = 2


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def number_size(text: str) -> int:
    """Bytes of a Number value: one per two significant digits, plus one (ITEM_SIZES).

    "Numbers are variable length, with up to 38 significant digits. Leading and trailing
    zeroes are trimmed. The size of a number is approximately ... (1 byte per two significant
    digits) + (1 byte)." The page says "approximately"; this is that formula, with half bytes
    rounded up. Zero counts as one significant digit (the page does not say).
    """
    digits = "".join(map(str, Decimal(text).as_tuple().digits)).strip("0")  # zeros trimmed
    return math.ceil(max(1, len(digits)) / DIGITS_PER_BYTE) + NUMBER_OVERHEAD


def _binary_size(raw: Any) -> int:
    # "the value's raw byte length is used for calculating size" (boto3 takes bytes, or str as UTF-8)
    return len(raw.encode("utf-8") if isinstance(raw, str) else bytes(raw))


def attribute_size(value: Mapping[str, Any]) -> int:
    """Bytes of one typed attribute value (`{"S": "x"}`), its name not included (ITEM_SIZES)."""
    (kind, raw), = value.items()
    if kind == "S":  # "(number of UTF-8-encoded bytes)"
        return _utf8(raw)
    if kind == "N":
        return number_size(raw)
    if kind == "B":
        return _binary_size(raw)
    if kind in ("BOOL", "NULL"):
        return BOOL_OR_NULL_BYTES
    # Sets are not on the page: sized here as the sum of their elements, with no overhead.
    if kind == "SS":
        return sum(_utf8(s) for s in raw)
    if kind == "NS":
        return sum(number_size(n) for n in raw)
    if kind == "BS":
        return sum(_binary_size(b) for b in raw)
    if kind == "L":  # "sum (size of nested elements) + (3 bytes)", and 1 byte per element
        return LIST_OR_MAP_OVERHEAD + sum(ELEMENT_OVERHEAD + attribute_size(v) for v in raw)
    if kind == "M":  # a map's elements are named: each counts its name as an attribute does
        return LIST_OR_MAP_OVERHEAD + sum(ELEMENT_OVERHEAD + _utf8(k) + attribute_size(v)
                                          for k, v in raw.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Bytes of an item in the low-level client's typed form; 0 for no item (ITEM_SIZES).

    "The total size of an item is the sum of the lengths of its attribute names and values."
    """
    return sum(_utf8(name) + attribute_size(value) for name, value in (item or {}).items())


# -- request units ---------------------------------------------------------------------------------
def write_units(size_bytes: int, transactional: bool = False) -> int:
    """WRUs to write an item of this size: 1 per KB, rounded up, at least 1 (READS_AND_WRITES).

    "For PutItem, UpdateItem, and DeleteItem operations, DynamoDB rounds the item size up to the
    next 1 KB." Every write request costs at least one unit: "writing a 500-byte item consumes the
    same throughput as writing a 1 KB item". A transactional write costs twice (TRANSACTIONAL).
    """
    units = max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))
    return units * (TRANSACTIONAL if transactional else 1)


def read_units(size_bytes: int, consistent: bool, transactional: bool = False) -> float:
    """RRUs to read this many bytes: 1 per 4 KB, rounded up; eventually consistent reads half.

    "Item sizes for reads are rounded up to the next 4 KB multiple" (READS_AND_WRITES); "If you
    perform a read operation on an item that doesn't exist, DynamoDB will still consume read
    throughput" (the same page): a missing item costs the minimum, one 4 KB unit.
    """
    units = float(max(1, math.ceil(size_bytes / READ_UNIT_BYTES)))
    if transactional:
        return units * TRANSACTIONAL
    return units if consistent else units * EVENTUALLY_CONSISTENT


# -- the tables' shapes (keys and global secondary indexes) ---------------------------------------
@dataclass(frozen=True)
class IndexShape:
    name: str
    key_names: tuple[str, ...]
    projection: str  # KEYS_ONLY, INCLUDE or ALL
    non_key_names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableShape:
    key_names: tuple[str, ...]
    indexes: tuple[IndexShape, ...] = ()

    @classmethod
    def from_description(cls, table: Mapping[str, Any]) -> "TableShape":
        def names(schema: list[dict[str, str]]) -> tuple[str, ...]:
            return tuple(part["AttributeName"] for part in schema)

        return cls(names(table["KeySchema"]), tuple(
            IndexShape(index["IndexName"], names(index["KeySchema"]),
                       index["Projection"]["ProjectionType"],
                       frozenset(index["Projection"].get("NonKeyAttributes", ())))
            for index in table.get("GlobalSecondaryIndexes", ())))

    def key_of(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self.key_names}

    def index_entry(self, index: IndexShape, item: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """What `item` puts into `index`: None when it lacks an index key (GSI_WRITES)."""
        if item is None or any(name not in item for name in index.key_names):
            return None
        if index.projection == "ALL":
            return dict(item)
        kept = set(self.key_names) | set(index.key_names)
        if index.projection == "INCLUDE":
            kept |= index.non_key_names
        return {name: value for name, value in item.items() if name in kept}

    def index_write_units(self, before: Mapping[str, Any] | None,
                          after: Mapping[str, Any] | None) -> int:
        """WRUs a table write adds in its global secondary indexes (GSI_WRITES).

        The guide's cases: an item that enters an index costs one write (a put); one that
        leaves it, one write (a delete); a change of an indexed key attribute "from A to B",
        two writes, "one to delete the previous item from the index and another write to put
        the new item into the index"; a change of projected attributes only, one write; "If a
        write to a table does not require a global secondary index update, no write capacity
        is consumed from the index." Each write is sized on the index entry and rounded to
        1 KB ("Larger index entries require additional write capacity units"); the update of
        projected attributes is sized on the larger entry, as a table update is.
        """
        units = 0
        for index in self.indexes:
            old, new = self.index_entry(index, before), self.index_entry(index, after)
            if old == new:
                continue
            if old is None or new is None:
                units += write_units(item_size(old or new))
            elif any(old[name] != new[name] for name in (*index.key_names, *self.key_names)):
                units += write_units(item_size(old)) + write_units(item_size(new))
            else:
                units += write_units(max(item_size(old), item_size(new)))
        return units


# -- what one request cost --------------------------------------------------------------------------
OK, CONDITION_FAILED, CANCELLED, ERROR, NO_RESPONSE, TTL_DELETE, UNMETERED = (
    "ok", "condition_failed", "cancelled", "error", "no_response", "ttl_delete", "unmetered")


@dataclass(frozen=True)
class RequestCost:
    """One request as DynamoDB bills it."""

    operation: str
    tables: tuple[str, ...]
    outcome: str  # one of the constants above
    wru: float = 0.0  # write request units, the indexes' included
    rru: float = 0.0  # read request units
    index_wru: float = 0.0  # the part of `wru` spent in global secondary indexes
    item_bytes: tuple[int, ...] = ()  # the size each item was billed on
    reported: Any = None  # ConsumedCapacity as the server returned it, when asked for
    params: Mapping[str, Any] = field(default_factory=dict, repr=False)
    note: str = ""  # why a request was left unpriced


@dataclass(frozen=True)
class Units:
    """Calls and request units: a total, or a share per event."""

    calls: float = 0
    wru: float = 0.0
    rru: float = 0.0

    def __add__(self, other: "Units") -> "Units":
        return Units(self.calls + other.calls, self.wru + other.wru, self.rru + other.rru)

    def dollars(self, price: "OnDemandPrice | None" = None) -> float:
        """What these units cost at on-demand prices, in US dollars."""
        price = price or US_EAST_1
        return (self.wru * price.usd_per_million_wru + self.rru * price.usd_per_million_rru) / 1e6


@dataclass(frozen=True)
class CapacitySummary:
    """A run's requests, per operation and in total."""

    by_operation: Mapping[str, Units]
    total: Units
    unmetered: int = 0  # PartiQL requests seen but not priced

    @classmethod
    def of(cls, requests: list[RequestCost]) -> "CapacitySummary":
        by: dict[str, Units] = defaultdict(Units)
        for request in requests:
            by[request.operation] += Units(1, request.wru, request.rru)
        total = sum(by.values(), Units())
        return cls(dict(sorted(by.items())), total,
                   sum(request.outcome == UNMETERED for request in requests))

    def per_event(self, events: int) -> Units:
        """The total shared out over `events` events (uploads, deliveries, ...)."""
        if events < 1:
            raise ValueError(f"events must be 1 or more, got {events}")
        return Units(self.total.calls / events, self.total.wru / events, self.total.rru / events)

    def dollars_per_million_events(self, events: int, price: "OnDemandPrice | None" = None) -> float:
        per = self.per_event(events)
        return dollars_per_million_uploads(per.wru, per.rru, price)


# -- dollars ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OnDemandPrice:
    region: str
    usd_per_million_wru: float
    usd_per_million_rru: float
    as_of: str  # the date the figures were read as current
    source: str


#: On-demand request prices, US East (N. Virginia), Standard table class. The page is PRICING;
#: its stored copy (search tool, docs corpus) has the key terms but not the price table, which
#: the page renders with a script. The figures are those quoted from it for us-east-1 by an
#: article dated 2025-07-21 (https://airbyte.com/data-engineering-resources/dynamodb-pricing,
#: "after the 50% reduction implemented in late 2024") and by a public project note that says
#: it checked PRICING on 2026-10-04; read here as current on 2026-10-04. The reduction took
#: effect on 2024-11-01; before it the same units cost twice as much.
US_EAST_1 = OnDemandPrice("us-east-1", usd_per_million_wru=0.625, usd_per_million_rru=0.125,
                          as_of="2026-10-04", source=PRICING)


def dollars_per_million_uploads(wru_per_upload: float, rru_per_upload: float,
                                price: OnDemandPrice | None = None) -> float:
    """US dollars a million uploads cost in DynamoDB requests, at on-demand prices."""
    price = price or US_EAST_1
    return wru_per_upload * price.usd_per_million_wru + rru_per_upload * price.usd_per_million_rru
