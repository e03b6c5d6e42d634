"""A function that deletes its own messages from the queue that feeds it.

Before ReportBatchItemFailures, AWS's advice for a partly failed batch was: delete each message done
yourself (DeleteMessage, or DeleteMessageBatch, with the receipt handle of this receive:
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html), then
fail the invocation, so that only what is left of the batch comes back
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). The check's source queue
is modelled (`idem.sim.triggers.SqsFedLambda`), not moto's, so those calls are answered here, from the
model: a handle of a message's latest receive deletes it; a handle of an earlier receive is a success
that deletes nothing ("you must provide the most recently received receipt handle ... otherwise, the
request succeeds, but the message might not be deleted", the same page); anything else is
ReceiptHandleIsInvalid. The call is still the invocation's boundary (faults before and after it land as
on any call: an answer lost after the message was deleted).
"""
from __future__ import annotations

from typing import Any, Callable

#: set in a call's botocore context by `before-parameter-build`: (queue name, [(entry id, handle)])
_DELETE = "idem_sqs_delete"


class _Answer:
    """What botocore needs of an HTTP response it did not send for."""

    def __init__(self, status: int) -> None:
        self.status_code, self.headers, self.content = status, {}, b""


def _queue_name(url: Any) -> str:
    return str(url).rstrip("/").rsplit("/", 1)[-1]


def watch_deletes(events: Any, current: Callable[[], Any]) -> None:
    """Answer a handler's DeleteMessage and DeleteMessageBatch on its source queue from the model
    (the watch's `sqs_source`, set by SqsFedLambda). Registered after the boundary's hooks, so a
    fault before the call lands first."""

    def noted(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
        running = current()
        source = getattr(running[0], "sqs_source", None) if running else None
        if source is None or not isinstance(params, dict) or not isinstance(context, dict):
            return
        if model.service_model.service_name != "sqs" or model.name not in ("DeleteMessage", "DeleteMessageBatch"):
            return
        if _queue_name(params.get("QueueUrl", "")) != source.mapping.queue_name:
            return
        entries = ([(None, params.get("ReceiptHandle"))] if model.name == "DeleteMessage"
                   else [(e.get("Id"), e.get("ReceiptHandle")) for e in params.get("Entries") or []])
        context[_DELETE] = entries

    def answered(model: Any, context: Any = None, **_: Any) -> Any:
        entries = context.get(_DELETE) if isinstance(context, dict) else None
        running = current()
        source = getattr(running[0], "sqs_source", None) if running else None
        if entries is None or source is None:
            return None
        meta = {"HTTPStatusCode": 200, "RequestId": "idem-sqs-delete", "HTTPHeaders": {}, "RetryAttempts": 0}
        if model.name == "DeleteMessage":
            if not source.delete_received(entries[0][1]):
                error = {"Code": "ReceiptHandleIsInvalid", "Message": "The input receipt handle is invalid."}
                return _Answer(400), {"Error": error, "ResponseMetadata": {**meta, "HTTPStatusCode": 400}}
            return _Answer(200), {"ResponseMetadata": meta}
        done, failed = [], []
        for entry_id, handle in entries:
            if source.delete_received(handle):
                done.append({"Id": entry_id})
            else:
                failed.append({"Id": entry_id, "SenderFault": True, "Code": "ReceiptHandleIsInvalid",
                               "Message": "The input receipt handle is invalid."})
        return _Answer(200), {"Successful": done, "Failed": failed, "ResponseMetadata": meta}

    # on the same events as the boundary's hooks, last: its `before-call` (a fault before the call)
    # runs first, and botocore stops at the first handler that answers
    events.register_last("before-parameter-build", noted, unique_id="idem-sqs-delete-params")
    events.register_last("before-call", answered, unique_id="idem-sqs-delete-answer")
