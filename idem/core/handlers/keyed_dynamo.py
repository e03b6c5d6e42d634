"""DynamoDB's typed values for the handler to copy (keyed.py): its records as plain Python
(ints, floats, strings, dicts) on one side and DynamoDB's attribute values on the other.
Copy it beside keyed.py; it imports only the standard library and boto3.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer  # type: ignore[import-untyped, unused-ignore]

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
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def error_code(error: Any) -> str:
    """The error code of a botocore ClientError."""
    return str(error.response.get("Error", {}).get("Code", ""))
