"""Which AWS calls the function really makes, observed, as IAM actions on template resources.

Every handler pattern runs on the local runtime, with and without each failure and with
a duplicate delivery, through a boto3 session that notes each DynamoDB operation and
its table. A transaction is authorised item by item (a Put needs dynamodb:PutItem on
its table), so TransactWriteItems is broken into its items. The result is what the role
in template.yaml must grant, and all it may grant, next to what Lambda itself does with
the role: send the failure record to the queue and write the logs.
"""
from __future__ import annotations

from typing import Any
from ...core.patterns import HANDLERS
from ...sim.faults import FaultPlan
from ...sim.sessions import watched_session
from ...sim.runtime import LocalLambda
from ...sim.world import LocalWorld

#: What the Lambda service does with the function's role, beside the function's own calls.
SERVICE_CALLS = {("sqs:SendMessage", "FailureQueue"), ("logs:CreateLogStream", "ChargeFunctionLogs"),
                 ("logs:PutLogEvents", "ChargeFunctionLogs")}
#: With tracing on (TracingMode Active), Lambda sends the function's traces with its role;
#: X-Ray accepts no resource but "*" (https://docs.aws.amazon.com/service-authorization/latest/reference/list_awsx-ray.html).
TRACING_CALLS = {("xray:PutTraceSegments", "*"), ("xray:PutTelemetryRecords", "*")}
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
             "ConditionCheck": "ConditionCheckItem"}


def iam_actions(operation: str, params: dict[str, Any]) -> set[tuple[str, str]]:
    """(IAM action, table name) pairs one DynamoDB API call needs."""
    if operation == "TransactWriteItems":
        return {(f"dynamodb:{_TRANSACT[kind]}", body["TableName"])
                for item in params["TransactItems"] for kind, body in item.items()}
    if operation == "TransactGetItems":
        return {("dynamodb:GetItem", item["Get"]["TableName"]) for item in params["TransactItems"]}
    return {(f"dynamodb:{operation}", params["TableName"])}


def observed_calls() -> set[tuple[str, str]]:
    """Run every handler pattern and failure point; return (action, logical id) pairs.

    The function's own clients and the provider stand-in's (which runs inside the function
    on AWS, under the same role) are both watched while the patterns run."""
    seen: set[tuple[str, str]] = set()

    def note(params: dict[str, Any], model: Any, **_: Any) -> None:
        seen.update(iam_actions(model.name, params))

    with LocalWorld(prefix="calls") as world:
        clients = (watched_session().client("dynamodb"), world.dynamodb)
        for client in clients:
            client.meta.events.register("before-parameter-build.dynamodb", note, unique_id="idem-calls")
        logical = {world.ledger_table: "LedgerTable", world.provider_table: "ProviderTable"}
        n = 0
        try:
            for mode in HANDLERS:
                for point in ("none", "at_charge", "after_charge"):
                    n += 1
                    runtime = LocalLambda(world, world.env(mode), fault=FaultPlan.at_point(point, "once"))
                    event = world.event(world.upload(f"alice/{mode}-{point}-{n}.txt"))
                    runtime.send(event)
                    runtime.send(event)  # S3 delivers it twice: the duplicate paths run too
                    runtime.run()
        finally:
            for client in clients:
                client.meta.events.unregister("before-parameter-build.dynamodb", unique_id="idem-calls")
    return {(action, logical.get(table, table)) for action, table in seen}


def required(tracing: bool = True) -> set[tuple[str, str]]:
    """Everything the function's role needs: its own calls and the service's."""
    return observed_calls() | SERVICE_CALLS | (TRACING_CALLS if tracing else set())
