"""A function changing the visibility timeout of its own messages (ChangeMessageVisibility, and its
batch form) on the queue that feeds it.

SQS: the call "changes the visibility timeout of a specified message in a queue to a new value", from 0
to 43,200 seconds, counted from the call, for a message in flight, named by the receipt handle of its
latest receive; 0 makes it visible at once; "you can continue to call ChangeMessageVisibility to extend
the visibility timeout to the maximum allowed time. If you try to extend the visibility timeout beyond
the maximum, your request is rejected", the maximum being 12 hours from the receive; the next receive
has the queue's own timeout again
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html).
The check's source queue is modelled (`idem.sim.triggers.SqsFedLambda`), not moto's, so the call is
answered here from the model, as `idem.sim.sqs_deletes` answers DeleteMessage: the message comes back
when its new timeout ends if the invocation fails it, and is deleted as usual if the batch succeeds.
Not modelled: another poller receiving it while the invocation that made it visible still runs (the
model's next receive comes after the invocation). The call stays the invocation's boundary.
"""
from __future__ import annotations

from typing import Any, Callable

from ..sqs_deletes import _Answer, _queue_name

#: set in a call's botocore context by `before-parameter-build`: [(entry id, handle, seconds)]
_CHANGE = "idem_sqs_visibility"
#: the call's range of VisibilityTimeout (the page above)
MOST_SECONDS = 43_200


def watch_visibility(events: Any, current: Callable[[], Any]) -> None:
    """Answer a handler's ChangeMessageVisibility and ChangeMessageVisibilityBatch on its source queue
    from the model (the watch's `sqs_source`). Registered after the boundary's hooks."""

    def source_of(running: Any) -> Any:
        return getattr(running[0], "sqs_source", None) if running else None

    def noted(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
        source = source_of(current())
        if source is None or not isinstance(params, dict) or not isinstance(context, dict):
            return
        if model.service_model.service_name != "sqs" or model.name not in (
                "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"):
            return
        if _queue_name(params.get("QueueUrl", "")) != source.mapping.queue_name:
            return
        context[_CHANGE] = ([(None, params.get("ReceiptHandle"), params.get("VisibilityTimeout"))]
                            if model.name == "ChangeMessageVisibility" else
                            [(e.get("Id"), e.get("ReceiptHandle"), e.get("VisibilityTimeout"))
                             for e in params.get("Entries") or []])

    def answered(model: Any, context: Any = None, **_: Any) -> Any:
        entries = context.get(_CHANGE) if isinstance(context, dict) else None
        source = source_of(current())
        if entries is None or source is None:
            return None
        meta = {"HTTPStatusCode": 200, "RequestId": "idem-sqs-visibility", "HTTPHeaders": {}, "RetryAttempts": 0}
        problems = [(entry_id, change(source, handle, seconds)) for entry_id, handle, seconds in entries]
        if model.name == "ChangeMessageVisibility":
            code = problems[0][1]
            if code:
                error = {"Code": code, "Message": f"ChangeMessageVisibility refused: {code}"}
                return _Answer(400), {"Error": error, "ResponseMetadata": {**meta, "HTTPStatusCode": 400}}
            return _Answer(200), {"ResponseMetadata": meta}
        done = [{"Id": entry_id} for entry_id, code in problems if not code]
        failed = [{"Id": entry_id, "SenderFault": True, "Code": code, "Message": code}
                  for entry_id, code in problems if code]
        return _Answer(200), {"Successful": done, "Failed": failed, "ResponseMetadata": meta}

    events.register_last("before-parameter-build", noted, unique_id="idem-sqs-visibility-params")
    events.register_last("before-call", answered, unique_id="idem-sqs-visibility-answer")


def change(source: Any, handle: Any, seconds: Any) -> str:
    """Change the message whose latest receive `handle` is to be visible `seconds` from now; returns
    the error code SQS answers, or "" when it is done."""
    if not isinstance(seconds, int) or not 0 <= seconds <= MOST_SECONDS:
        return "InvalidParameterValue"
    for message in source.messages:
        if isinstance(handle, str) and message.receipt == handle:
            if message.gone:
                return "ReceiptHandleIsInvalid"
            if source.clock.now() - message.received_at + seconds > MOST_SECONDS:
                return "InvalidParameterValue"  # past 12 hours from its receive
            message.visible_at = source.clock.now() + seconds
            source._poll_at(message.visible_at)
            return ""
    return "ReceiptHandleIsInvalid"
