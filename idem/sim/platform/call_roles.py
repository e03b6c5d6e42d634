"""What an AWS call asks, beside its name: the part of the request a handler's code fixes, not its data.

A boundary is named by the call and its number in the invocation (`before dynamodb:UpdateItem`). Two requests
at one boundary can be two different writes: a clean run's UpdateItem that keeps a payment method, and, in
another schedule, an UpdateItem at the same place that parks the order. The second round of `idem check`
(idem.explore.families.second_fault) fails a call the clean run never made; it tells such calls apart by
their role: for DynamoDB, the table, the expressions, the attribute names written or named, a PartiQL
statement, and each item of a transaction or a batch the same way; for other services, the resource the
request names (its bucket, queue, topic, state machine, function or event bus). Keys and values are the
request's data (an order id, an amount), never part of its role, but for a value that reads as a word
(`WORD`: "done", "parked", "in_progress"): a status the handler's code writes, so that one `SET #s = :s`
writing "done" and another writing "parked" are two requests.

What is not told apart: two requests whose values alone differ, each value with a digit, a space or
punctuation (data), or a status word made of data.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

#: DynamoDB's expressions: what a request reads, writes and requires (its code, not its data)
EXPRESSIONS = ("KeyConditionExpression", "UpdateExpression", "ConditionExpression", "FilterExpression",
               "ProjectionExpression", "Statement")
#: the parameters other services name a resource by (the request's target, fixed by the handler's code)
RESOURCES = ("Bucket", "QueueUrl", "TopicArn", "TargetArn", "StateMachineArn", "FunctionName", "EventBusName")
#: how long a role may be in a schedule's label
SHOWN = 60
#: a value that reads as a word, written by the handler's code (a status), not data (an id, a key, a reason)
WORD = re.compile(r"[A-Za-z_]{1,40}")


def role_of(call: str, params: Any) -> str:
    """The role of a request to `call` ("dynamodb:UpdateItem") with its API parameters: "" for none."""
    if not isinstance(params, Mapping):
        return ""
    if call.startswith("dynamodb:"):
        return _dynamodb(params)
    return " ".join(f"{name}={params[name]}" for name in RESOURCES if isinstance(params.get(name), str))


def _dynamodb(params: Mapping[str, Any]) -> str:
    parts = [str(params["TableName"])] if isinstance(params.get("TableName"), str) else []
    parts += [str(params[name]) for name in EXPRESSIONS if isinstance(params.get(name), str)]
    names = params.get("ExpressionAttributeNames")
    if isinstance(names, Mapping):
        parts.append("names " + ",".join(sorted(str(v) for v in names.values())))
    item = params.get("Item")
    if isinstance(item, Mapping):
        parts.append("item " + ",".join(sorted(str(k) + _word(v) for k, v in item.items())))
    values = params.get("ExpressionAttributeValues")
    if isinstance(values, Mapping) and any(_word(v) for v in values.values()):
        parts.append("values " + ",".join(sorted(f"{k}{_word(v)}" for k, v in values.items() if _word(v))))
    # a transaction's items, a PartiQL batch's statements, a batch's requests: each kind once, however many
    # orders it carries (a batch of one order's line asks what a batch of two orders' lines asks)
    for many in ("TransactItems", "Statements"):
        if isinstance(params.get(many), list):
            parts += sorted({_each(entry) for entry in params[many]})
    requests = params.get("RequestItems")  # BatchWriteItem, BatchGetItem: each table's requests
    if isinstance(requests, Mapping):
        parts += sorted({f"{table}: {_each(request)}" for table, some in requests.items()
                         for request in (some if isinstance(some, list) else [some])})
    return "; ".join(parts)


def _word(value: Any) -> str:
    """`="done"` for a DynamoDB string that reads as a word (`WORD`); "" for data."""
    text = value.get("S") if isinstance(value, Mapping) else None
    return f'="{text}"' if isinstance(text, str) and WORD.fullmatch(text) else ""


def _each(entry: Any) -> str:
    """One item of a transaction or a batch: its kind (Put, Update, PutRequest...) and its role."""
    if not isinstance(entry, Mapping):
        return ""
    if "Statement" in entry:
        return _dynamodb(entry)
    return " ".join(f"{kind} {_dynamodb(inner) if isinstance(inner, Mapping) else ''}".strip()
                    for kind, inner in sorted(entry.items()))


def shown(role: str) -> str:
    """A role as a schedule's label shows it, cut short."""
    return role if len(role) <= SHOWN else role[:SHOWN - 3] + "..."
