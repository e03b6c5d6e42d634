"""Two DynamoDB refusals moto 5.2 does not make: an expression placeholder given and never used, and a
Number DynamoDB cannot store.

**Placeholders.** AWS: "If you define an expression attribute value, you must use it consistently
throughout the expression" and "You must also use ExpressionAttributeValues [...]"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html);
the API pages do not document the refusal of an unused one nor its words. Real DynamoDB answers it with
a ValidationException "Value provided in ExpressionAttributeValues unused in expressions: keys: {:a, :b}"
(a real answer quoted in https://github.com/awspilot/dynamodb-oop/issues/29), and "Value provided in
ExpressionAttributeNames unused in expressions: keys: {#f2}"
(https://github.com/AllocZero/EfficientDynamoDb/issues/170); its checks on a request (an empty map:
"ExpressionAttributeValues must not be empty", https://github.com/SamVerschueren/dynongo/pull/61;
values on a request with no expression that takes them: "ExpressionAttributeValues can only be
specified when using expressions: ConditionExpression is null") are written as dynalite, an emulator
tested against DynamoDB, writes them (mhart/dynalite validations/index.js); none of these words is on an
AWS page. moto 5.2.5 refuses an unused name on every call but TransactGetItems, an unused value on
UpdateItem only: it writes a PutItem, DeleteItem and TransactWriteItems action whose
ExpressionAttributeValues hold one no expression uses (or that has no expression at all), and answers
such a Query or Scan; it takes an empty ExpressionAttributeNames on PutItem, DeleteItem, UpdateItem,
Query and Scan, and an unused name in TransactGetItems (each tried through `idem.sim.world`).

Here a placeholder (`#name` or `:value`) counts as used where it stands in the request's own
expressions as a whole token: ConditionExpression, UpdateExpression, KeyConditionExpression,
FilterExpression, ProjectionExpression (names only), whichever the call takes; in TransactWriteItems and
TransactGetItems each action is judged on its own, in BatchGetItem each table's request.

**Numbers.** AWS: "Numbers can be positive, negative, or zero. Numbers can have up to 38 digits of
precision. Exceeding this results in an exception. [...] Positive range: 1E-130 to
9.9999999999999999999999999999999999999E+125; Negative range: -9.9999999999999999999999999999999999999E+125
to -1E-130. In DynamoDB, numbers are represented as variable length. Leading and trailing zeroes are
trimmed." (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html#HowItWorks.DataTypes.Number;
the same limits in https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html#limits-data-types).
So a digit counts unless it is a leading or trailing zero: `1` followed by 40 zeros is one digit,
`0e1000` is zero (ScyllaDB's tests, run against DynamoDB, store `31415926535897932384626433832795028841e30`
and `0e1000`: scylladb test/alternator/test_number.py). The messages (ValidationException) are not on
an AWS page; they are real DynamoDB's as dynalite and ScyllaDB's tests quote them: "Attempting to store
more than 38 significant digits in a Number", "Number overflow. Attempting to store a number with
magnitude larger than supported range" (the second also among a ValidationError's messages in
https://repost.aws/knowledge-center/dynamodb-transactwriteitems), "Number underflow. [...] smaller than
supported range". Which of them DynamoDB names first for a number both too long and out of range is
not documented: here the range, as dynalite does. moto 5.2.5 refuses
only an underflow, and takes a Number of any precision and an overflowing one, in an Item,
ExpressionAttributeValues, a transaction and a batch. Checked here: every N and NS, in maps and lists
too, of Item, Key, ExpressionAttributeValues and ExclusiveStartKey, in PutItem, DeleteItem, UpdateItem,
GetItem, Query, Scan, TransactWriteItems, TransactGetItems, BatchWriteItem and BatchGetItem. A text that
is no number is left to moto's own answer. Not checked: a number an UpdateExpression's `+`/`-` makes,
and PartiQL parameters.

Every refusal is moto's MockValidationException (botocore's ClientError code "ValidationException"),
raised before moto reads or writes anything.
"""
from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Iterator

from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.responses import DynamoHandler

#: the expressions each call takes, in which its placeholders may be used
EXPRESSIONS: dict[str, tuple[str, ...]] = {
    "put_item": ("ConditionExpression",),
    "delete_item": ("ConditionExpression",),
    "update_item": ("UpdateExpression", "ConditionExpression"),
    "get_item": ("ProjectionExpression",),
    "query": ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"),
    "scan": ("FilterExpression", "ProjectionExpression"),
}
#: a TransactWriteItems or TransactGetItems action's expressions
ACTION_EXPRESSIONS: dict[str, tuple[str, ...]] = {
    "Put": ("ConditionExpression",), "Delete": ("ConditionExpression",),
    "Update": ("UpdateExpression", "ConditionExpression"), "ConditionCheck": ("ConditionExpression",),
    "Get": ("ProjectionExpression",),
}
#: the members of a request (or of an action in it) that hold attribute values
VALUE_MEMBERS = ("Item", "Key", "ExclusiveStartKey")
MAX_DIGITS = 38
MAX_EXPONENT = 125  # 9.99...E+125
MIN_EXPONENT = -130  # 1E-130
PRECISION = "Attempting to store more than 38 significant digits in a Number"
OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
_installed: list[Any] = []


def is_used(placeholder: str, texts: Iterable[str]) -> bool:
    """Whether the placeholder stands in one of the expressions as a whole token (`#a` is not in `#ab`)."""
    token = re.compile(re.escape(placeholder) + r"(?![0-9A-Za-z_])")
    return any(token.search(text) for text in texts)


def placeholder_refusal(request: Any, expressions: tuple[str, ...]) -> str | None:
    """DynamoDB's refusal of the request's ExpressionAttributeNames/Values, or None where it takes them."""
    if not isinstance(request, dict):
        return None
    names, values = request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues")
    if names is not None and not names:
        return "ExpressionAttributeNames must not be empty"
    if values is not None and not values:
        return "ExpressionAttributeValues must not be empty"
    given = [e for e in expressions if isinstance(request.get(e), str)]
    if names and not given:
        return "ExpressionAttributeNames can only be specified when using expressions"
    value_expressions = [e for e in expressions if e != "ProjectionExpression"]
    if values and not any(e in given for e in value_expressions):
        verb = "is" if len(value_expressions) == 1 else "are"
        return ("ExpressionAttributeValues can only be specified when using expressions: "
                f"{' and '.join(value_expressions)} {verb} null")
    texts = [request[e] for e in given]
    for kind, provided, usable in (("Names", names, texts),
                                   ("Values", values, [request[e] for e in given if e != "ProjectionExpression"])):
        if not isinstance(provided, dict):
            continue
        unused = [str(key) for key in provided if not is_used(str(key), usable)]
        if unused:
            return f"Value provided in ExpressionAttribute{kind} unused in expressions: keys: {{{', '.join(unused)}}}"
    return None


def number_refusal(text: str) -> str | None:
    """DynamoDB's refusal of a Number's text, or None where it stores it (or where it is no number: moto's)."""
    try:
        number = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        return None
    if not number.is_finite():
        return None
    _, digits, exponent = number.as_tuple()
    significant = "".join(map(str, digits)).lstrip("0")
    if not significant:
        return None  # zero, whatever its exponent
    kept = significant.rstrip("0")
    exponent = int(exponent) + len(significant) - len(kept)
    magnitude = exponent + len(kept) - 1  # the power of ten of its first digit
    if magnitude > MAX_EXPONENT:
        return OVERFLOW
    if magnitude < MIN_EXPONENT:
        return UNDERFLOW
    if len(kept) > MAX_DIGITS:
        return PRECISION
    return None


def numbers(value: Any) -> Iterator[str]:
    """Every Number's text in an attribute value (N, NS, and in M and L)."""
    if not isinstance(value, dict):
        return
    for kind, inner in value.items():
        if kind == "N" and isinstance(inner, str):
            yield inner
        elif kind == "NS" and isinstance(inner, list):
            yield from (n for n in inner if isinstance(n, str))
        elif kind == "M" and isinstance(inner, dict):
            for member in inner.values():
                yield from numbers(member)
        elif kind == "L" and isinstance(inner, list):
            for member in inner:
                yield from numbers(member)


def request_numbers(request: Any) -> Iterator[str]:
    """Every Number in a request's (or an action's) Item, Key, ExclusiveStartKey and ExpressionAttributeValues."""
    if not isinstance(request, dict):
        return
    maps = [request.get(member) for member in VALUE_MEMBERS] + [request.get("ExpressionAttributeValues")]
    for attributes in maps:
        if isinstance(attributes, dict):
            for value in attributes.values():
                yield from numbers(value)


def actions(body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The actions of a TransactWriteItems/TransactGetItems, and the requests of a BatchWriteItem/BatchGetItem,
    each with its kind (Put, Update, Get, PutRequest, Keys...)."""
    items = body.get("TransactItems")
    for entry in items if isinstance(items, list) else []:
        if isinstance(entry, dict):
            yield from entry.items()
    tables = body.get("RequestItems")
    for requests in tables.values() if isinstance(tables, dict) else []:
        if isinstance(requests, list):  # BatchWriteItem
            for entry in requests:
                if isinstance(entry, dict):
                    yield from entry.items()
        elif isinstance(requests, dict):  # BatchGetItem: its keys, and its expression for the table
            yield "BatchGet", requests
            for key in requests.get("Keys") or []:
                yield "Keys", {"Key": key}


def refusal(method: str, body: Any) -> str | None:
    """DynamoDB's refusal of the request moto's `method` answers, or None where DynamoDB takes it."""
    if not isinstance(body, dict):
        return None
    requests: list[tuple[Any, tuple[str, ...] | None]] = [(body, EXPRESSIONS.get(method))]
    for kind, action in actions(body):
        expressions = ACTION_EXPRESSIONS.get(kind)
        if kind == "BatchGet":
            expressions = ("ProjectionExpression",)
        requests.append((action, expressions))
    for request, expressions in requests:
        if expressions is not None:
            refused = placeholder_refusal(request, expressions)
            if refused:
                return refused
        for text in request_numbers(request):
            refused = number_refusal(text)
            if refused:
                return refused
    return None


METHODS = ("put_item", "delete_item", "update_item", "get_item", "query", "scan",
           "transact_write_items", "transact_get_items", "batch_write_item", "batch_get_item")


def refuse_invalid_requests() -> None:
    """Wrap moto's DynamoDB calls so a request DynamoDB refuses (an unused placeholder, a Number out of
    range or precision) is refused before moto reads or writes anything. Safe to call twice."""
    if _installed:
        return
    for method in METHODS:
        original = getattr(DynamoHandler, method)
        _installed.append((method, original))

        @functools.wraps(original)
        def checked(self: Any, __original: Any = original, __method: str = method) -> Any:
            refused = refusal(__method, self.body)
            if refused:
                raise MockValidationException(refused)
            return __original(self)

        setattr(DynamoHandler, method, checked)
