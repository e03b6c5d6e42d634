"""Redrive: send what sits in the failure queue back to the function, as the event it was.

Lambda's on-failure destination holds an invocation record per failed event: the event
itself is its `requestPayload`. A redrive re-sends that payload unchanged, hours or days
later. Unchanged matters: the event's own `eventTime` tells the handler how old the upload
is, and `keyed` looks up a charge older than the provider's key window instead of charging
with a key the provider may have pruned (chapter 07). A redrive that builds a fresh event
(`fresh=True`, what naive redrive code does) hides the event's age; `keyed` still looks the
charge up, because its record keeps when the order's first charge attempt began (the key's
own age, docs/money_contract.md), so a fresh event a day later is booked once too.

Locally the function is a LocalLambda; against the stack's queue (chapter 09) the same loop
sends each payload with Lambda's `Invoke` (InvocationType Event).
"""
from __future__ import annotations

import copy
import json
from typing import Any, Callable

from ..core.clock import iso8601
from ..sim.faults import FaultPlan
from ..sim.runtime import LocalLambda
from ..sim.world import LocalWorld
from ..core.provider import DAY
from ..deploy.template import FUNCTION, load, resolve


def redrive(sqs: Any, queue_url: str, send: Callable[[dict[str, Any]], Any], *,
            now: float | None = None, fresh: bool = False) -> int:
    """Re-send every event in the failure queue through `send`, deleting each message once
    sent; return how many. `fresh=True` stamps each S3 record with the time `now` (naive)."""
    sent = 0
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return sent
        for n, message in enumerate(messages):
            body = json.loads(message["Body"])
            event = body.get("requestPayload", body)  # a destination record, or a DLQ's plain event
            if fresh and now is not None:
                event = copy.deepcopy(event)
                for record in event.get("Records", []):
                    record["eventTime"] = iso8601(now)
            try:
                send(event)
            except Exception:
                _release(sqs, queue_url, messages[n:])
                raise
            sent += 1
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def _release(sqs: Any, queue_url: str, unsent: list[dict[str, Any]]) -> None:
    """A send failed: the batch's messages not sent yet are visible again at once (visibility
    timeout 0), so a rerun finds them now, not after the queue's visibility timeout
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html)."""
    for message in unsent:
        try:
            sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"],
                                          VisibilityTimeout=0)
        except Exception:  # noqa: BLE001 - the send's own error is the one to report
            pass  # it comes back after the visibility timeout instead


def redrive_local(runtime: Any, *, fresh: bool = False) -> int:
    """Redrive the world's failure queue into a LocalLambda, then run it."""
    world = runtime.world
    sent = redrive(world.sqs, world.queue_url, runtime.send, now=runtime.clock.now(), fresh=fresh)
    runtime.run()
    return sent


def invoke_async(lambda_client: Any, function_name: str, event: dict[str, Any]) -> Any:
    """Send one event to a deployed function as an asynchronous invocation (Lambda's Invoke, Event)."""
    return lambda_client.invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(event).encode())


def redrive_to_lambda(sqs: Any, queue_url: str, lambda_client: Any, function_name: str) -> int:
    """Redrive a deployed stack's failure queue into its function, as asynchronous invocations."""
    return redrive(sqs, queue_url, lambda event: invoke_async(lambda_client, function_name, event))


def story(after_seconds: float, fresh: bool = False) -> dict[str, Any]:
    """Charge, die before the commit on every attempt (into the failure queue), then redrive
    `after_seconds` later with the fault gone. What the provider and the ledger hold."""
    with LocalWorld(prefix="redrive") as world:
        broken = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("after_charge", "always"))
        broken.send(world.event(world.upload("alice/order.csv")))
        broken.run()
        queued = world.failure_queue_depth()
        world.clock.advance(after_seconds)
        sent = redrive_local(LocalLambda(world, world.env("keyed")), fresh=fresh)
        records = world.ledger().records()
        return {"queued": queued, "redriven": sent, "charges": len(world.provider().charges()),
                "ledger": world.ledger().entry("alice")[0],
                "record": records[0].status.value if records else "-"}


def lifetimes(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The four lifetimes of chapter 07, as the stack sets them (template.yaml's demo profile,
    whose stand-in provider states its key retention), in one table, with the rule each obeys.
    `env` overrides the function's settings."""
    sam = load()
    demo = resolve(sam, {"Profile": "demo"})  # conditions and parameters, as CloudFormation would
    function = demo["Resources"][FUNCTION]["Properties"]
    settings = {**function["Environment"]["Variables"], **(env or {})}
    queue = demo["Resources"]["FailureQueue"]  # the charge function's (the reconciler has its own)
    age = int(function["EventInvokeConfig"]["MaximumEventAgeInSeconds"])
    rows = [  # (lifetime, seconds, the rule it obeys)
        ("max event age (Lambda)", age, "Lambda's retries of one event end here"),
        ("record TTL (ledger)", int(settings["RECORD_TTL_SECONDS"]), "at least the max event age"),
        ("key retention (provider)", int(settings.get("PROVIDER_KEY_RETENTION_SECONDS", DAY)),
         "at least the max event age"),
        ("message retention (queue)", int(queue["Properties"]["MessageRetentionPeriod"]),
         "redrives until here: look up first"),
    ]
    return [{"lifetime": name, "seconds": seconds, "hours": round(seconds / 3600, 1), "rule": rule}
            for name, seconds, rule in rows]
