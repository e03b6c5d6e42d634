"""DynamoDB's attribute values, read from a request and written into an answer the short way while a
batch of schedules runs (part of `idem.explore.run.fastcalls`; docs/reliability.md, "How long the
check takes").

moto reads every request's JSON, and writes every answer's, by walking botocore's model of it, one
member at a time. An attribute value (`{"S": "alice"}`, `{"M": {...}}`) is a structure of ten
members, so each one costs ten look-ups in each direction, and an idempotency record carries a
few dozen. An attribute value is a one-member object whose member's value moto leaves as it is
(a string, a boolean, a list of strings, or more attribute values): the walk gives back what it
was given. Here such a value is copied as it is; anything else (a binary `B` or `BS`, whose
base64 moto decodes and encodes, an object with no member or two, a member of another type, an
empty name) goes moto's own way. tests/test_check_fastcalls.py compares the two on random values.
"""
from __future__ import annotations

from typing import Any

#: the members copied as they are: their value's type
SCALARS = {"S": str, "N": str, "BOOL": bool, "NULL": bool}
SETS = ("SS", "NS")
#: the attribute value's shape in DynamoDB's model
SHAPE = "AttributeValue"


def plain_value(value: Any) -> dict[str, Any] | None:
    """A copy of an attribute value that moto's walk would give back unchanged, or None."""
    if type(value) is not dict or len(value) != 1:
        return None
    ((name, inner),) = value.items()
    kind = SCALARS.get(name)
    if kind is not None:
        return {name: inner} if type(inner) is kind else None
    if name in SETS:
        return {name: list(inner)} if type(inner) is list and inner and all(type(x) is str for x in inner) else None
    if name == "M" and type(inner) is dict:
        members = {}
        for key, member in inner.items():
            plain = plain_value(member) if type(key) is str and key else None
            if plain is None:
                return None
            members[key] = plain
        return {"M": members}
    if name == "L" and type(inner) is list:
        items = []
        for member in inner:
            plain = plain_value(member)
            if plain is None:
                return None
            items.append(plain)
        return {"L": items}
    return None


def values_written_plainly() -> Any:
    """moto's JSON answers: a DynamoDB attribute value written as it is, when it is plain (see the module)."""
    from moto.core.serialize import JSONSerializer

    own = JSONSerializer._serialize_type_structure

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and shape.name == SHAPE and self.operation_model.service_model.service_name == "dynamodb":
            plain = plain_value(value)
            if plain is not None:
                self._default_serialize(serialized, plain, shape, key)  # as moto's walk ends
                return
        own(self, serialized, value, shape, key)

    JSONSerializer._serialize_type_structure = serialize_structure  # type: ignore[method-assign]

    def undo() -> None:
        JSONSerializer._serialize_type_structure = own  # type: ignore[method-assign]
    return undo


def values_read_plainly() -> Any:
    """moto's reading of a DynamoDB request: an attribute value taken as it is, when it is plain."""
    from moto.core.parse import JSONParser

    own = JSONParser._parse_structure

    def parse_structure(self: Any, shape: Any, value: Any) -> Any:
        if shape.name == SHAPE and self.MAP_TYPE is dict and self.operation_model.service_model.service_name == "dynamodb":
            plain = plain_value(value)
            if plain is not None:
                return plain
        return own(self, shape, value)

    JSONParser._parse_structure = parse_structure  # type: ignore[method-assign]

    def undo() -> None:
        JSONParser._parse_structure = own  # type: ignore[method-assign]
    return undo
