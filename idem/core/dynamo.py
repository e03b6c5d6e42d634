"""Small helpers over the low-level DynamoDB client (boto3 only)."""
from __future__ import annotations

from decimal import Decimal
from typing import Any, overload

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_item(values: dict[str, Any]) -> dict[str, Any]:
    """Plain Python values to DynamoDB's typed attribute map (None values are left out)."""
    return {k: _serializer.serialize(_plain_to_dynamo(v)) for k, v in values.items() if v is not None}


@overload
def from_item(item: dict[str, Any]) -> dict[str, Any]: ...
@overload
def from_item(item: None) -> None: ...
def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """DynamoDB's typed attribute map to plain Python values (numbers become int or float)."""
    if item is None:
        return None
    return {k: _dynamo_to_plain(_deserializer.deserialize(v)) for k, v in item.items()}


def values(**named: Any) -> dict[str, Any]:
    """ExpressionAttributeValues from keyword arguments: values(now=1) -> {':now': {'N': '1'}}."""
    return {f":{k}": _serializer.serialize(_plain_to_dynamo(v)) for k, v in named.items()}


def condition_failed(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def cancelled_by_condition(error: ClientError, index: int) -> bool:
    """True when item `index` of a cancelled transaction failed its condition."""
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = error.response.get("CancellationReasons") or []
    return index < len(reasons) and reasons[index].get("Code") == "ConditionalCheckFailed"


def _plain_to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _plain_to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_to_dynamo(v) for v in value]
    return value


def _dynamo_to_plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _dynamo_to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dynamo_to_plain(v) for v in value]
    return value
