"""A batch write answered in part: DynamoDB's BatchWriteItem returning items unprocessed.

BatchWriteItem is not all or nothing, and its failures are not errors: "If any requested operations
fail because the table's provisioned throughput is exceeded or an internal processing failure occurs,
the failed operations are returned in the UnprocessedItems response parameter. You can investigate and
optionally resend the requests." (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)
The call succeeds (HTTP 200), so neither botocore nor an `except` sees anything. moto processes every
item. Here, a fault plan whose outcome is `UNPROCESSED` at a BatchWriteItem's boundary (the runs family:
once, or several calls in a row: `idem.explore.families.runs`) answers that call with every item
unprocessed and writes nothing; a handler that reads UnprocessedItems and sends them again meets the
next call's answer. The call stays the invocation's boundary.
"""
from __future__ import annotations

from typing import Any, Callable

from ..sqs_deletes import _Answer

#: the fault plan's outcome that asks for it (FaultPlan.outcome)
UNPROCESSED = "unprocessed"
#: the calls that can answer so, as boundaries name them
PARTIAL_CALLS = ("dynamodb:BatchWriteItem",)
#: set in a call's botocore context by `before-parameter-build`: the request's RequestItems
_ITEMS = "idem_batch_items"


def watch_partial(events: Any, current: Callable[[], Any]) -> None:
    """Answer a BatchWriteItem whose boundary the plan gave the `UNPROCESSED` outcome with every item
    unprocessed. Registered after the boundary's hooks, whose `before-call` sets the outcome."""

    def noted(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
        if (current() and isinstance(params, dict) and isinstance(context, dict)
                and f"{model.service_model.endpoint_prefix}:{model.name}" in PARTIAL_CALLS):
            context[_ITEMS] = params.get("RequestItems") or {}

    def answered(model: Any, context: Any = None, **_: Any) -> Any:
        running = current()
        items = context.get(_ITEMS) if isinstance(context, dict) else None
        if items is None or not running or getattr(running[1], "outcome", "") != UNPROCESSED:
            return None
        running[1].outcome = ""  # this call's answer only
        meta = {"HTTPStatusCode": 200, "RequestId": "idem-batch-unprocessed", "HTTPHeaders": {}, "RetryAttempts": 0}
        return _Answer(200), {"UnprocessedItems": items, "ResponseMetadata": meta}

    events.register_last("before-parameter-build", noted, unique_id="idem-batch-partial-params")
    events.register_last("before-call", answered, unique_id="idem-batch-partial-answer")
