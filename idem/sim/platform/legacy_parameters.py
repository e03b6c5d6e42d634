"""DynamoDB's legacy parameters, `Expected` (with `ConditionalOperator`) and UpdateItem's `AttributeUpdates`,
as DynamoDB takes them where moto 5.2 does not.

AWS ("Legacy conditional parameters: Expected" and "ConditionalOperator",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.Expected.html,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.ConditionalOperator.html;
the ExpectedAttributeValue type, https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ExpectedAttributeValue.html):

- a condition with a `Value` holds when the attribute is there with that value (`Exists` is true by
  default: "If you supply a Value all by itself, DynamoDB assumes the attribute exists"); with `Exists`
  false and no `Value`, when the attribute is not there; with a `ComparisonOperator`, as it says;
- `ConditionalOperator` OR: "at least one of the conditions must evaluate to true"; AND (the default):
  all of them;
- "DynamoDB returns a ValidationException if: Exists is true but there is no Value to check [...]
  Exists is false but you also provide a Value", and when Value or Exists come with a
  ComparisonOperator or an AttributeValueList ("Value and Exists are incompatible with
  AttributeValueList and ComparisonOperator").

moto 5.2.5 joins every condition with AND whatever the operator, takes `"Exists": true` with a `Value` as
"the attribute is there" without comparing the value, takes both refused forms, and ignores `Expected`
on DeleteItem. Here PutItem, UpdateItem and DeleteItem are judged as AWS says; the refusals' words are
this module's (AWS documents the refusals, not their messages). `ConditionExpression` requests are left
to moto as they were.

`AttributeUpdates` with the action PUT "Adds the specified attribute to the item. If the attribute already
exists, it is replaced by the new value"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.AttributeUpdates.html):
the value as given, of any type. moto 5.2.5 writes a BOOL, a B or a BS as a string (`{"BOOL": true}` is
stored as `{"S": "True"}`) and deletes the attribute for a NULL; here PUT stores the value given. ADD and
DELETE are moto's.
"""
from __future__ import annotations

import contextvars
import functools
from typing import Any

from moto.dynamodb import comparisons
from moto.dynamodb.exceptions import ConditionalCheckFailed, MockValidationException
from moto.dynamodb.responses import DynamoHandler

#: the request's ConditionalOperator, while moto answers it
_OPERATOR: contextvars.ContextVar[str] = contextvars.ContextVar("legacy_conditional_operator", default="AND")
_installed: list[Any] = []
METHODS = ("put_item", "update_item", "delete_item")


def refusal(expected: Any) -> str | None:
    """DynamoDB's refusal of an `Expected` map, or None where it takes it."""
    if not isinstance(expected, dict):
        return None
    for name, cond in expected.items():
        if not isinstance(cond, dict):
            continue
        compared = "ComparisonOperator" in cond or "AttributeValueList" in cond
        if compared and ("Value" in cond or "Exists" in cond):
            return (f"One or more parameter values were invalid: Value and Exists cannot be used with "
                    f"ComparisonOperator and AttributeValueList for Attribute: {name}")
        if compared:
            continue
        exists = cond.get("Exists", True)
        if exists and "Value" not in cond:
            return f"One or more parameter values were invalid: Value must be provided when Exists is true for Attribute: {name}"
        if not exists and "Value" in cond:
            return f"One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: {name}"
    return None


def expected_op(expected: dict[str, Any]) -> Any:
    """moto's condition for `Expected`, judged as DynamoDB judges it (see the module), joined by the
    request's ConditionalOperator."""
    conditions: list[Any] = []
    for name, cond in (expected or {}).items():
        path = comparisons.AttributePath([name])
        if "ComparisonOperator" in cond:
            single = comparisons.get_expected({name: cond})  # moto's own operators, one condition
            conditions.append(single)
        elif cond.get("Exists", True):
            conditions.append(comparisons.OpEqual(path, comparisons.AttributeValue(cond["Value"])))
        else:
            conditions.append(comparisons.FuncAttrNotExists(path))
    if not conditions:
        return comparisons.OpDefault(None, None)  # type: ignore[arg-type]
    join = comparisons.OpOr if _OPERATOR.get().upper() == "OR" else comparisons.OpAnd
    found = conditions[0]
    for condition in conditions[1:]:
        found = join(found, condition)
    return found


def _delete_refused(handler: Any, body: dict[str, Any]) -> bool:
    """Whether a DeleteItem's `Expected` fails on the item it names (moto ignores it)."""
    backend = handler.dynamodb_backend
    table = backend.get_table(body["TableName"])
    hash_value, range_value = backend.get_keys_value(table, body["Key"])
    return not expected_op(body["Expected"]).expr(table.get_item(hash_value, range_value))


def _put_as_given(original: Any) -> Any:
    """moto's `Item.update_with_attribute_updates`, with each PUT storing its value as given."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    @functools.wraps(original)
    def update(self: Any, attribute_updates: dict[str, Any]) -> None:
        for name, action in attribute_updates.items():
            if action.get("Action", "PUT") == "PUT" and isinstance(action.get("Value"), dict):
                self.attrs[name] = DynamoType(dict(action["Value"]))
            else:
                original(self, {name: action})

    return update


def judge_legacy_parameters() -> None:
    """Wrap moto's PutItem, UpdateItem and DeleteItem so `Expected` is refused or judged as DynamoDB
    does, and an `AttributeUpdates` PUT stores its value as given (see the module). Safe to call twice."""
    if _installed:
        return
    from moto.dynamodb import models
    from moto.dynamodb.models import table
    from moto.dynamodb.models.dynamo_type import Item

    _installed.append((Item, "update_with_attribute_updates", Item.update_with_attribute_updates))
    Item.update_with_attribute_updates = _put_as_given(Item.update_with_attribute_updates)  # type: ignore[method-assign]

    for module in (models, table):  # where moto's put and update look it up
        _installed.append((module, "get_expected", module.get_expected))
        module.get_expected = expected_op  # type: ignore[attr-defined]
    for method in METHODS:
        original = getattr(DynamoHandler, method)
        _installed.append((DynamoHandler, method, original))

        @functools.wraps(original)
        def judged(self: Any, __original: Any = original, __method: str = method) -> Any:
            body = self.body if isinstance(self.body, dict) else {}
            if "Expected" not in body:
                return __original(self)
            refused = refusal(body["Expected"])
            if refused:
                raise MockValidationException(refused)
            token = _OPERATOR.set(str(body.get("ConditionalOperator") or "AND"))
            try:
                if __method == "delete_item" and _delete_refused(self, body):
                    raise ConditionalCheckFailed
                return __original(self)
            finally:
                _OPERATOR.reset(token)

        setattr(DynamoHandler, method, judged)
