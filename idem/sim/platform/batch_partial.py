"""A batch call answered in part: its failures in its answer, not as an error.

Five calls a handler makes are not all or nothing, and answer their failures with HTTP 200, so neither
botocore nor an `except` sees anything:

- DynamoDB's BatchWriteItem: "If any requested operations fail because the table's provisioned
  throughput is exceeded or an internal processing failure occurs, the failed operations are returned
  in the UnprocessedItems response parameter. You can investigate and optionally resend the requests."
  (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)
- DynamoDB's BatchGetItem "returns a partial result if the response size limit is exceeded, the
  table's provisioned throughput is exceeded, more than 1MB per partition is requested, or an internal
  processing failure occurs ... If at least one of the items is successfully processed, then
  BatchGetItem completes successfully, while returning the keys of the unread items in UnprocessedKeys"
  (https://docs.amazonaws.cn/sdkfornet/v3/apidocs/items/DynamoDBv2/MIDynamoDBBatchGetItemBatchGetItemRequest.html).
- SQS's SendMessageBatch: "For each message in the batch, the response contains a
  SendMessageBatchResultEntry tag if the message succeeds or a BatchResultErrorEntry tag if the message
  fails" (`Failed`: "each message that can't be enqueued":
  https://docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SQS/Types/SendMessageBatchResult.html).
- SNS's PublishBatch: `Successful` and `Failed`, "A list of failed PublishBatch responses"
  (https://docs.aws.amazon.com/sdk-for-ruby/v3/api/Aws/SNS/Types/PublishBatchResponse.html).
- EventBridge's PutEvents: "if an individual entry within a request fails, EventBridge continues
  processing the rest ... You must detect unsuccessful entries and include them in a subsequent call"
  (`FailedEntryCount`, and `ErrorCode` on each failed entry:
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevents.html).

moto processes every entry. Here, a fault plan whose outcome is `UNPROCESSED` at such a call's boundary
(the runs family: once, or several calls in a row: `idem.explore.families.runs`) answers that call
with every entry failed or unprocessed, nothing done (BatchGetItem: the first key read, as it must
read one to answer at all, the others unprocessed); a handler that reads its answer and sends what
failed again meets the next call's answer. The call stays the invocation's boundary, and an effect
named with `--effect` is not counted for it (`NOTHING_LANDED`): nothing landed.
"""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

from ..sqs_deletes import _Answer

#: the fault plan's outcome that asks for it (FaultPlan.outcome)
UNPROCESSED = "unprocessed"
#: the calls that can answer so, as boundaries name them
PARTIAL_CALLS = ("dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "sqs:SendMessageBatch", "sns:PublishBatch",
                 "events:PutEvents")
#: set in a call's botocore context by `before-parameter-build`: the request's parameters
_PARAMS = "idem_batch_params"
#: set in a call's botocore context when its answer was made here: no effect of it landed
NOTHING_LANDED = "idem_nothing_landed"
_FAILED = {"Code": "InternalError", "SenderFault": False, "Message": "idem check: this entry failed (a partial answer)"}


def partial_words(call: str) -> str:
    """How a schedule's label says what `call` was answered: DynamoDB's items unprocessed, the others' entries failed."""
    return "item answered unprocessed" if call.startswith("dynamodb:") else "entry answered failed"


def partial_answer(call: str, params: dict[str, Any], region: str,
                   unwatched: Callable[[], AbstractContextManager[Any]] = nullcontext) -> dict[str, Any]:
    """What `call` answers with every entry failed or unprocessed (BatchGetItem: all but its first key, read
    inside `unwatched`: the check's own call, not the handler's)."""
    if call == "dynamodb:BatchWriteItem":
        return {"UnprocessedItems": params.get("RequestItems") or {}}
    if call == "dynamodb:BatchGetItem":
        return _first_key_read(params.get("RequestItems") or {}, region, unwatched)
    if call == "events:PutEvents":
        entries = params.get("Entries") or []
        return {"FailedEntryCount": len(entries), "Entries": [
            {"ErrorCode": "InternalFailure", "ErrorMessage": _FAILED["Message"]} for _ in entries]}
    entries = params.get("Entries") or params.get("PublishBatchRequestEntries") or []
    return {"Successful": [], "Failed": [{"Id": entry.get("Id", ""), **_FAILED} for entry in entries]}


def _first_key_read(items: dict[str, Any], region: str,
                    unwatched: Callable[[], AbstractContextManager[Any]]) -> dict[str, Any]:
    """BatchGetItem's partial result: its first key read from moto (not as the handler's call), the rest unread."""
    from ..world import fake_client

    first = next(iter(items), None)
    if first is None or not items[first].get("Keys"):
        return {"Responses": {}, "UnprocessedKeys": items}
    one = {first: {**items[first], "Keys": items[first]["Keys"][:1]}}
    rest = {table: {**wanted, "Keys": wanted["Keys"][1:] if table == first else wanted["Keys"]}
            for table, wanted in items.items()}
    with unwatched():
        read = fake_client("dynamodb", region).batch_get_item(RequestItems=one)
    return {"Responses": read.get("Responses", {}),
            "UnprocessedKeys": {table: wanted for table, wanted in rest.items() if wanted.get("Keys")}}


def watch_partial(events: Any, current: Callable[[], Any],
                  unwatched: Callable[[], AbstractContextManager[Any]]) -> None:
    """Answer a call of PARTIAL_CALLS whose boundary the plan gave the `UNPROCESSED` outcome with every
    entry failed or unprocessed. Registered after the boundary's hooks, whose `before-call` sets the outcome."""

    def noted(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
        if (current() and isinstance(params, dict) and isinstance(context, dict)
                and f"{model.service_model.endpoint_prefix}:{model.name}" in PARTIAL_CALLS):
            context[_PARAMS] = params

    def answered(model: Any, context: Any = None, **_: Any) -> Any:
        running = current()
        params = context.get(_PARAMS) if isinstance(context, dict) else None
        if params is None or not running or getattr(running[1], "outcome", "") != UNPROCESSED:
            return None
        running[1].outcome = ""  # this call's answer only
        context[NOTHING_LANDED] = True
        call = f"{model.service_model.endpoint_prefix}:{model.name}"
        meta = {"HTTPStatusCode": 200, "RequestId": "idem-batch-partial", "HTTPHeaders": {}, "RetryAttempts": 0}
        return _Answer(200), {**partial_answer(call, params, context.get("client_region") or "us-east-1", unwatched),
                              "ResponseMetadata": meta}

    events.register_last("before-parameter-build", noted, unique_id="idem-batch-partial-params")
    events.register_last("before-call", answered, unique_id="idem-batch-partial-answer")
