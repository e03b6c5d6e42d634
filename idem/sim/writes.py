"""Where a handler's writes land: the table items and objects each succeeded write call touched.

`idem check` judges a write (DynamoDB PutItem, UpdateItem, BatchWriteItem, ...; S3 PutObject, the
transfer manager's included) by the state it leaves, not by how often it was called
(`idem.explore.state`). For that it needs to know, for each invocation's work, which items and
objects the handler's write calls named as an effect (`--effect`) touched. Two botocore hooks note
it: the call's parameters before they are built (`before-parameter-build`, where boto3's DynamoDB
resource has already made them typed AttributeValues), and the call's answer (`after-call`): only
a call AWS answered with success (2xx) wrote anything. A conditional put that failed its condition
(400) wrote nothing.

Each write is kept on the invocation's `Watch` as (call, work, targets); a target is
("table", TableName, item-or-key) or ("bucket", Bucket, Key).
"""
from __future__ import annotations

from typing import Any, Callable

#: The watch and invocation the running code belongs to (boundary.current, handed over by
#: `watch_writes`: this module does not import boundary, which registers it).
_current: Callable[[], Any] = lambda: None  # noqa: E731

#: The calls whose effect is state: what they leave is read back and compared, not their count.
STATE_CALLS = frozenset({
    "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
    "dynamodb:TransactWriteItems",
    "s3:PutObject", "s3:CopyObject", "s3:CompleteMultipartUpload", "s3:DeleteObject",
})
_PARAMS = "idem_write_params"


def _name(model: Any) -> str:
    return f"{model.service_model.endpoint_prefix}:{model.name}"


def _noted(params: Any = None, model: Any = None, context: Any = None, **_: Any) -> None:
    """before-parameter-build: keep the write's parameters in the request's context."""
    if model is None or context is None or not isinstance(params, dict) or _name(model) not in STATE_CALLS:
        return
    running = _current()
    if running is not None and _name(model) in running[0].effects:
        context[_PARAMS] = params


def _written(model: Any = None, http_response: Any = None, context: Any = None, **_: Any) -> None:
    """after-call: a write AWS answered with success is noted on the invocation's watch."""
    if model is None or not context or _PARAMS not in context:
        return
    running = _current()
    params = context.pop(_PARAMS)
    if running is None or getattr(http_response, "status_code", 200) >= 300:
        return
    watch, visit = running
    name = _name(model)
    if name not in watch.effects:
        return
    watch.__dict__.setdefault("writes", []).append((name, visit.work, targets(name, params)))


def targets(name: str, params: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """What a write call touches, from its parameters."""
    found: list[tuple[str, str, Any]] = []
    if name.startswith("s3:"):
        if params.get("Bucket") and params.get("Key"):
            found.append(("bucket", params["Bucket"], params["Key"]))
        return found
    if name in ("dynamodb:PutItem",):
        found.append(("table", params.get("TableName", ""), params.get("Item", {})))
    elif name in ("dynamodb:UpdateItem", "dynamodb:DeleteItem"):
        found.append(("table", params.get("TableName", ""), params.get("Key", {})))
    elif name == "dynamodb:BatchWriteItem":
        for table, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                put, delete = request.get("PutRequest"), request.get("DeleteRequest")
                found.append(("table", table, put["Item"] if put else delete["Key"]))
    elif name == "dynamodb:TransactWriteItems":
        for entry in params.get("TransactItems", []):
            for kind in ("Put", "Update", "Delete"):
                if kind in entry:
                    part = entry[kind]
                    found.append(("table", part.get("TableName", ""), part.get("Item") or part.get("Key", {})))
    return found


def writes_of(watch: Any) -> list[tuple[str, str, list[tuple[str, str, Any]]]]:
    """Every succeeded write noted on `watch`: (call, work, targets)."""
    return list(watch.__dict__.get("writes", []))


def watch_writes(events: Any, current: Callable[[], Any]) -> None:
    """Put the two hooks on a botocore event system (with the boundary hooks: `watch_events`);
    `current` names the running invocation (boundary.current)."""
    global _current
    _current = current
    events.register("before-parameter-build", _noted, unique_id="idem-write-params")
    # first among after-call's handlers: a fault injected after the call (the answer lost, the
    # process dying) raises from the boundary's handler, and the write has landed all the same
    events.register_first("after-call", _written, unique_id="idem-write-done")
