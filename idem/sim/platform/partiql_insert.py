"""DynamoDB's PartiQL INSERT (ExecuteStatement), which moto 5.2 writes over an item already there, and
whose `?` parameters its parser cannot take.

AWS: "If the DynamoDB table already has an item with the same primary key as the primary key of the
item being inserted, DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). So an
INSERT is a claim, as a put with `attribute_not_exists(pk)` is: a function may claim an order with it.

moto 5.2.5 (DynamoDBBackend.execute_statement) applies an INSERT as a put with no condition: the second
claim of one order overwrites the first and succeeds, and the check would call a correct function's
second charge its fault. And its PartiQL parser (py_partiql_parser 0.6) reads no parameters in an
INSERT: `VALUE {'pk': ?}` with `Parameters=[...]` (ExecuteStatement's documented way to pass values)
fails inside it with a TypeError (`Unsupported type ... Variable`).

Here an INSERT sent with ExecuteStatement is read by moto's own parser, each `?` (outside quotes: the
parser reads `'?'` as a string) bound to its parameter in order, as the AttributeValue given (never
written into the statement's text), and written by moto's own put on the condition that no item has
its key: a refusal is DuplicateItemException, and the item there is left as it was. A count of
parameters other than the statement's `?` is the ValidationException moto answers for an UPDATE.
Every other statement (SELECT, UPDATE, DELETE), and an INSERT inside ExecuteTransaction or
BatchExecuteStatement, goes moto's own way. The request runs under `idem.sim.atomic`'s lock (every
DynamoDB request moto serves does), so two claims of one key cannot both land.
"""
from __future__ import annotations

import functools
from typing import Any

from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, ConditionalCheckFailed, DynamodbException, \
    MockValidationException
from moto.dynamodb.responses import DynamoHandler, DynamoResult
from py_partiql_parser._internal import insert_parser
from py_partiql_parser._internal.utils import Variable

_installed: list[Any] = []
#: moto's answer for an UPDATE whose parameters and `?` differ in number
MISMATCH = "Number of parameters in request and statement don't match."


class DuplicateItemException(DynamodbException):
    """DynamoDB's answer to an INSERT of a key the table has."""

    error_type = ERROR_TYPE_PREFIX + "DuplicateItemException"

    def __init__(self) -> None:
        super().__init__(DuplicateItemException.error_type, "Duplicate primary key exists in table")


def is_insert(statement: Any) -> bool:
    return isinstance(statement, str) and statement.lstrip().lower().startswith("insert")


def parsed(statement: str, parameters: list[Any]) -> tuple[str, dict[str, Any]]:
    """The table and the item of an INSERT, as moto's parser reads them, each `?` bound to its parameter."""
    own = insert_parser.serializer
    bound = _Bound(parameters)
    insert_parser.serializer = bound  # read at each call of InsertParser.parse; under the lock
    try:
        table, item = insert_parser.InsertParser().parse(statement.lstrip().replace("\n", " "))
    finally:
        insert_parser.serializer = own
    if bound.given:
        raise MockValidationException(MISMATCH)
    return table, item


class _Bound(type(insert_parser.serializer)):  # type: ignore[misc]
    """moto's parser's serializer, which gives each `?` its parameter, in order (in maps and lists too)."""

    def __init__(self, parameters: list[Any]) -> None:
        self.given = list(parameters)

    def serialize(self, value: Any) -> Any:
        if isinstance(value, Variable) and value.value == "?":
            if not self.given:
                raise MockValidationException(MISMATCH)
            return self.given.pop(0)
        return super().serialize(value)


def insert(backend: Any, statement: str, parameters: list[Any]) -> None:
    """The INSERT, refused with DuplicateItemException where the table has an item with its key."""
    table_name, item = parsed(statement, parameters)
    table = backend.get_table(table_name)  # ResourceNotFoundException, where moto's own raised a KeyError
    try:
        backend.put_item(table_name, item, condition_expression="attribute_not_exists(#key)",
                         expression_attribute_names={"#key": table.hash_key_attr})
    except ConditionalCheckFailed:
        raise DuplicateItemException() from None


def refuse_duplicate_inserts() -> None:
    """Wrap moto's ExecuteStatement so an INSERT takes parameters and refuses a key the table has.
    Safe to call twice."""
    if _installed:
        return
    original = DynamoHandler.execute_statement
    _installed.append(original)

    @functools.wraps(original)
    def execute_statement(self: Any) -> Any:
        statement = self.body.get("Statement", "")
        if not is_insert(statement):
            return original(self)
        insert(self.dynamodb_backend, statement, self.body.get("Parameters") or [])
        return DynamoResult({"Items": []})  # an INSERT returns no values (the page above)

    DynamoHandler.execute_statement = execute_statement  # type: ignore[method-assign]

