"""DynamoDB's PartiQL INSERT (ExecuteStatement, ExecuteTransaction, BatchExecuteStatement), which moto 5.2
writes over an item already there, and whose `?` parameters its parser cannot take.

AWS: "If the DynamoDB table already has an item with the same primary key as the primary key of the
item being inserted, DuplicateItemException is returned"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.insert.html). So an
INSERT is a claim, as a put with `attribute_not_exists(pk)` is: a function may claim an order with it.
In a transaction, "If any of the singleton INSERT, UPDATE, or DELETE operations return an error, the
transactions are cancelled with the TransactionCanceledException exception, and the cancellation reason
code includes the errors from the individual singleton operations"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.transactions.html).
In a batch, "A HTTP 200 response does not mean that all statements in the BatchExecuteStatement
succeeded. Error details for individual statements can be found under the Error field"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchExecuteStatement.html), whose
codes include `DuplicateItem`
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchStatementError.html). AWS lists
no code for a duplicate INSERT among TransactionCanceledException's cancellation reason codes
(https://docs.aws.amazon.com/botocore/latest/reference/services/dynamodb/client/exceptions/TransactionCanceledException.html):
here it is `DuplicateItem` too, the code AWS gives that error in a PartiQL batch; its message, here and
in a batch, is this module's, not one AWS documents.

moto 5.2.5 applies an INSERT as a put with no condition, in all three calls (DynamoDBBackend.execute_statement,
which execute_transaction and batch_execute_statement call for each statement): the second claim of one
order overwrites the first and succeeds, no error, and the check would call a correct function's second
charge its fault. And its PartiQL parser (py_partiql_parser 0.6) reads no parameters in an INSERT:
`VALUE {'pk': ?}` with `Parameters=[...]` (the documented way to pass values) fails inside it with a
TypeError (`Unsupported type ... Variable`), in all three calls.

Here an INSERT is read by moto's own parser, each `?` (outside quotes: the parser reads `'?'` as a
string) bound to its parameter in order, as the AttributeValue given (never written into the statement's
text), and written by moto's own put on the condition that no item has its key. A count of parameters
other than the statement's `?` is the ValidationException moto answers for an UPDATE.
- ExecuteStatement: a refusal is DuplicateItemException, the item there left as it was.
- ExecuteTransaction with an INSERT: every INSERT is read and its key looked up before anything is
  written; one whose key the table has cancels the whole transaction (TransactionCanceledException, a
  reason per statement in order: `DuplicateItem` for it, `None` for the others), nothing written; two
  INSERTs of one key are moto's ValidationException for two actions on one item. Otherwise the
  statements run in order, each INSERT by the put, every other moto's own way (which is not all or
  nothing: a later statement failing leaves the earlier ones written, as moto's own transaction does).
- BatchExecuteStatement with an INSERT: each statement on its own, in order; an INSERT refused answers
  `{"Error": {"Code": "DuplicateItem", ...}}` in its place, the others applied (a missing table is
  `ResourceNotFound`, a wrong count of parameters `ValidationError`); every other statement goes
  moto's own way, one at a time.
Every other statement (SELECT, UPDATE, DELETE), and a transaction or batch with no INSERT, goes moto's
own way. The request runs under `idem.sim.atomic`'s lock (every DynamoDB request moto serves does), so
two claims of one key cannot both land, and a transaction's look-ups and writes are one step.
"""
from __future__ import annotations

import functools
from typing import Any

from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, ConditionalCheckFailed, DynamodbException, \
    MockValidationException, MultipleTransactionsException, ResourceNotFoundException, TransactionCanceledException
from moto.dynamodb.responses import DynamoHandler, DynamoResult
from py_partiql_parser._internal import insert_parser
from py_partiql_parser._internal.utils import Variable

_installed: list[Any] = []
#: moto's answer for an UPDATE whose parameters and `?` differ in number
MISMATCH = "Number of parameters in request and statement don't match."
#: DynamoDB's code for an INSERT of a key the table has, in a PartiQL batch (BatchStatementError) and here
#: in a transaction's cancellation reasons; and this module's message for it
DUPLICATE_ITEM = "DuplicateItem"
DUPLICATE_MESSAGE = "Duplicate primary key exists in table"


class DuplicateItemException(DynamodbException):
    """DynamoDB's answer to an INSERT of a key the table has."""

    error_type = ERROR_TYPE_PREFIX + "DuplicateItemException"

    def __init__(self) -> None:
        super().__init__(DuplicateItemException.error_type, DUPLICATE_MESSAGE)


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


def insert(backend: Any, statement: str, parameters: list[Any]) -> str:
    """The INSERT, refused with DuplicateItemException where the table has an item with its key: its table."""
    table_name, item = parsed(statement, parameters)
    put(backend, table_name, item)
    return table_name


def put(backend: Any, table_name: str, item: dict[str, Any]) -> None:
    """moto's put of an INSERT's item, on the condition that no item has its key."""
    table = backend.get_table(table_name)  # ResourceNotFoundException, where moto's own raised a KeyError
    try:
        backend.put_item(table_name, item, condition_expression="attribute_not_exists(#key)",
                         expression_attribute_names={"#key": table.hash_key_attr})
    except ConditionalCheckFailed:
        raise DuplicateItemException() from None


def transaction(backend: Any, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ExecuteTransaction's answers: cancelled whole, nothing written, if an INSERT's key is in its table."""
    inserts = {i: parsed(s["Statement"], s.get("Parameters") or [])
               for i, s in enumerate(statements) if is_insert(s.get("Statement"))}
    keys: set[Any] = set()
    reasons: list[tuple[str | None, str | None, None]] = []
    for i in range(len(statements)):
        reason: tuple[str | None, str | None, None] = (None, None, None)
        if i in inserts:
            table_name, item = inserts[i]
            table = backend.get_table(table_name)
            key = (table.name, *backend.get_keys_value(table, item))
            if key in keys:
                raise MultipleTransactionsException()
            keys.add(key)
            if table.get_item(*key[1:]) is not None:
                reason = (DUPLICATE_ITEM, DUPLICATE_MESSAGE, None)
        reasons.append(reason)
    if any(code for code, _, _ in reasons):
        raise TransactionCanceledException(reasons)
    responses: list[dict[str, Any]] = []
    for i, statement in enumerate(statements):
        if i in inserts:
            put(backend, *inserts[i])
        else:
            items = backend.execute_statement(statement["Statement"], statement.get("Parameters", []))
            responses.extend({"Item": item} for item in items)
    return responses


def batch(backend: Any, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BatchExecuteStatement's answers, one per statement: an INSERT refused is its own Error, the others run."""
    responses: list[dict[str, Any]] = []
    for statement in statements:
        if not is_insert(statement.get("Statement")):
            responses.extend(backend.batch_execute_statement([statement]))
            continue
        try:
            responses.append({"TableName": insert(backend, statement["Statement"], statement.get("Parameters") or [])})
        except DuplicateItemException:
            responses.append({"Error": {"Code": DUPLICATE_ITEM, "Message": DUPLICATE_MESSAGE}})
        except ResourceNotFoundException:
            responses.append({"Error": {"Code": "ResourceNotFound", "Message": "Requested resource not found"}})
        except MockValidationException as refused:
            responses.append({"Error": {"Code": "ValidationError", "Message": refused.message}})
    return responses


def refuse_duplicate_inserts() -> None:
    """Wrap moto's ExecuteStatement, ExecuteTransaction and BatchExecuteStatement so an INSERT takes
    parameters and refuses a key the table has. Safe to call twice."""
    if _installed:
        return
    own_statement, own_transaction, own_batch = (
        DynamoHandler.execute_statement, DynamoHandler.execute_transaction, DynamoHandler.batch_execute_statement)
    _installed.extend((own_statement, own_transaction, own_batch))

    @functools.wraps(own_statement)
    def execute_statement(self: Any) -> Any:
        statement = self.body.get("Statement", "")
        if not is_insert(statement):
            return own_statement(self)
        insert(self.dynamodb_backend, statement, self.body.get("Parameters") or [])
        return DynamoResult({"Items": []})  # an INSERT returns no values (the page above)

    @functools.wraps(own_transaction)
    def execute_transaction(self: Any) -> Any:
        statements = self.body.get("TransactStatements", [])
        if not any(is_insert(s.get("Statement")) for s in statements):
            return own_transaction(self)
        return DynamoResult({"Responses": transaction(self.dynamodb_backend, statements)})

    @functools.wraps(own_batch)
    def batch_execute_statement(self: Any) -> Any:
        statements = self.body.get("Statements", [])
        if not any(is_insert(s.get("Statement")) for s in statements):
            return own_batch(self)
        return DynamoResult({"Responses": batch(self.dynamodb_backend, statements)})

    DynamoHandler.execute_statement = execute_statement  # type: ignore[method-assign]
    DynamoHandler.execute_transaction = execute_transaction  # type: ignore[method-assign]
    DynamoHandler.batch_execute_statement = batch_execute_statement  # type: ignore[method-assign]
