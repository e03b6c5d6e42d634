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


#: Calls that answer with the effect they made, which may be one made before: StartExecution with the
#: name and input of a running execution "succeeds and return[s] the same response as the original
#: request" (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
#: The same execution again is not a second effect: counted by the distinct ids answered. That promise
#: is a STANDARD workflow's: "StartExecution isn't idempotent for EXPRESS workflows" (the same page;
#: "Starting multiple workflows with the same name results in concurrent executions",
#: https://docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html), and the
#: check's moto answers each Express start with a new execution ARN (idem.sim.platform.sfn_express),
#: so each is counted.
SAME_EFFECT_IDS = {"states:StartExecution": "executionArn"}


def _answered(model: Any = None, parsed: Any = None, **_: Any) -> None:
    """after-call: note the id of the effect a SAME_EFFECT_IDS call answered with."""
    running = _current()
    if running is None or model is None or not isinstance(parsed, dict):
        return
    note_effect_id(running[0], running[1], _name(model), parsed)


def note_effect_id(watch: Any, visit: Any, name: str, answer: dict[str, Any]) -> None:
    """Keep the id of the effect `answer` names, for a call named as an effect (`SAME_EFFECT_IDS`)."""
    field = SAME_EFFECT_IDS.get(name)
    if field and name in watch.effects and answer.get(field):
        watch.__dict__.setdefault("effect_ids", []).append((name, visit.work, str(answer[field])))


def count_same_effects_once(watch: Any) -> None:
    """Each SAME_EFFECT_IDS call's count per work: the distinct effects its answers named first (an
    execution another upload's invocation started, answered again, is that upload's)."""
    ids: dict[tuple[str, str], set[str]] = {}
    first: set[tuple[str, str]] = set()
    for name, work, found in watch.__dict__.get("effect_ids", []):
        ids.setdefault((name, work), set())
        if (name, found) not in first:
            first.add((name, found))
            ids[(name, work)].add(found)
    for key, distinct in ids.items():
        watch.effect_counts[key] = len(distinct)


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
    events.register_first("after-call", _answered, unique_id="idem-effect-id")  # before a fault there
