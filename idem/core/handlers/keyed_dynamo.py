"""DynamoDB for the handler to copy (keyed.py): the record of one order (`Record`, its `Status`),
typed values to and from plain Python, and one conditional write."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Callable, Mapping

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

_SERIALIZE, _DESERIALIZE = TypeSerializer(), TypeDeserializer()


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item as DynamoDB returns it, as plain values (whole numbers as int)."""
    return {name: _plain(_DESERIALIZE.deserialize(value)) for name, value in item.items()}


def as_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _SERIALIZE.serialize(_dynamo(value)) for name, value in values.items() if value is not None}


def as_values(**named: Any) -> dict[str, Any]:
    return {f":{name}": _SERIALIZE.serialize(_dynamo(value)) for name, value in named.items()}


def _dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    return {k: _dynamo(v) for k, v in value.items()} if isinstance(value, dict) else value


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, dict) else value


def error_code(error: Any) -> str:
    """The error code of a botocore ClientError."""
    return str(error.response.get("Error", {}).get("Code", ""))


def conditional_write(write: Callable[..., Any], **request: Any) -> dict[str, Any] | None:
    """One conditional write: None when it went through; when its condition failed, the item that
    refused it (with ReturnValuesOnConditionCheckFailure=ALL_OLD), or {}. Other errors are raised."""
    try:
        write(**request)
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":
            raise
        return dict(error.response.get("Item") or {})
    return None


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)
    PENDING = "pending"  # the provider took the charge but has not settled it (Stripe: processing)
    RELEASED = "released"  # a person found no charge and released it (`idem settle`): the next claim takes it

    def __str__(self) -> str:
        return self.value


#: A record's optional attributes, as `Record.from_item` reads them back.
RECORD_FIELDS = ("owner", "lease_until", "expires_at", "result", "source", "created_at", "first_attempt_at",
                 "payment_method", "customer", "currency", "cents", "metadata")


@dataclass(frozen=True)
class Record:
    """One order's record. `first_attempt_at` (the key's age) and `payment_method` are kept through
    every takeover; `metadata` (what the charge is for) is the first claim's, sent on every attempt."""

    key: str
    status: Status
    owner: str = ""
    lease_until: float = 0.0
    expires_at: float = 0.0
    result: Any = None
    source: str = ""
    created_at: float = 0.0
    first_attempt_at: float = 0.0
    payment_method: str = ""
    customer: str = ""  # on a ledger line: who paid, in what currency, how much
    currency: str = ""
    cents: int = 0
    metadata: Any = None

    def to_plain(self) -> dict[str, Any]:
        """The record's attributes as stored (none that is empty)."""
        return {"pk": self.key, "status": self.status.value, "result": self.result,
                **{name: getattr(self, name) or None for name in RECORD_FIELDS if name != "result"}}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Record:
        plain = from_item(item)
        return cls(plain["pk"], Status(plain.get("status", Status.CLAIMED.value)),
                   **{name: plain[name] for name in RECORD_FIELDS if name in plain})


@dataclass(frozen=True)
class Claim:
    """The answer to every claim: won (with the record it wrote), or lost to the record holding the key."""

    won: bool
    existing: Record | None = None
    mine: Record | None = None  # on a win: the claim as it is stored, which the commit replaces


def ours(item: Mapping[str, Any], owner: str, status: Status) -> bool:
    """The record that refused a fenced write is that very write, made already (re-sent)."""
    record = Record.from_item(item)
    return record.owner == owner and record.status is status
