"""The AWS SDK as it behaves at a boundary: what botocore raises, and the request it sends again.

botocore retries a call itself before the handler hears anything
(https://docs.aws.amazon.com/boto3/latest/guide/retries.html; the modes and their attempts:
https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html). Two faults follow:

- **Before a call, a throttle** (`aws_error`): the service answers with its throttling code, and
  the handler sees it only once botocore's own attempts are spent (MaxAttemptsReached).
- **After a call, a lost answer** (`lose_answers`): the request did its work (moto answered it),
  and the answer never came back: a read timeout, which every retry mode retries ("General
  socket/connection errors ... ReadTimeoutError" in legacy mode; standard mode's transient errors).
  So botocore sends the request again, as the handler's client is configured (its mode and
  `max_attempts`, read by botocore itself from the client's Config, the environment or the
  defaults), and the handler receives the resend's own answer: a conditional put that its own
  first attempt stored now fails its condition. Only when every attempt's answer is lost does the
  handler see the ReadTimeoutError. A fault plan's `run` says how many attempts in a row lose
  their answer (`EVERY`: all of them).

The loss is injected where the answer leaves moto (`moto.core.botocore_stubber.BotocoreStubber`,
botocore's `before-send` event): inside botocore's retry loop, so the resend, its backoff (on the
check's clock: time.sleep moves it) and the decision to stop are botocore's own.
"""
from __future__ import annotations

import functools
from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError

#: A run that loses the answer of every attempt the SDK makes (more than any max_attempts).
EVERY = 99
#: The boundary names this module reads (idem.sim.boundary's CHARGE_CALL and END_CALL; it imports
#: this module, so this one does not import it: `install` is handed its `current` and `Crossing`).
_CHARGE_CALL, _END_CALL = "provider:charge", "end"
_HOOKS: dict[str, Any] = {}

#: The error a service answers when it throttles, as botocore raises it once its own retries are
#: spent: the codes botocore itself retries as throttling (botocore/data/_retry.json, and
#: botocore.retries.standard's _THROTTLED_ERROR_CODES); DynamoDB's capacity error
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html) and
#: S3's SlowDown, 503 (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html);
#: any other service answers ThrottlingException.
THROTTLES = {"dynamodb": ("ProvisionedThroughputExceededException", 400), "s3": ("SlowDown", 503)}
DEFAULT_THROTTLE = ("ThrottlingException", 400)


def lost_answer(call: str, attempt: int, landed: bool) -> ReadTimeoutError:
    """The error botocore meets when the answer to one attempt of `call` is lost: a ReadTimeoutError,
    as the handler would see it once every attempt's answer is (its type, its message). `landed`:
    the attempt did its work (AWS answered it with success) before the answer was lost."""
    error = ReadTimeoutError(endpoint_url=f"https://{call.partition(':')[0]}.us-east-1.amazonaws.com/ (the answer "
                                          f"to {call}, attempt {attempt}, was lost: the call did its work)")
    error.idem_lost_answer, error.landed = True, landed  # type: ignore[attr-defined]
    return error


def is_lost_answer(error: Any) -> bool:
    return bool(getattr(error, "idem_lost_answer", False))


def aws_error(boundary: Any, arrival: int) -> Exception:
    """What botocore raises to a handler at `boundary` of an AWS call: before it, the service
    throttles (a ClientError with its real code, after botocore's retries: MaxAttemptsReached);
    after it (every attempt's answer lost), ReadTimeoutError."""
    service, _, operation = boundary.call.partition(":")
    if str(boundary.side) == "after":
        return lost_answer(boundary.call, arrival, True)
    code, status = THROTTLES.get(service, DEFAULT_THROTTLE)
    return ClientError({"Error": {"Code": code, "Message": f"injected: {service} throttled {operation} "
                                                          f"(arrival {arrival})"},
                        "ResponseMetadata": {"HTTPStatusCode": status, "MaxAttemptsReached": True}}, operation)


#: what a cancelled transaction's reasons say of a throttled item (ThrottlingError) and of the others
_THROTTLED_REASONS = ({"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity of your table "
                       "or index (injected)"}, {"Code": "None"})


#: the transactions a throttle cancels, and the member of the request listing their items
_TRANSACTIONS = {"dynamodb:TransactWriteItems": "TransactItems", "dynamodb:ExecuteTransaction": "TransactStatements"}


def cancelled_transaction(call: str, error: Exception, request: Any) -> tuple[Any, dict[str, Any]] | None:
    """A throttle (`aws_error`) before a TransactWriteItems as DynamoDB answers it: the transaction
    cancelled, "insufficient provisioned capacity for the transaction to be completed"
    (https://docs.aws.amazon.com/sdk-for-python/v1/reference/clients/dynamodb/errors/TransactionCanceledException/),
    one CancellationReason per item (the first ThrottlingError, the others None); botocore does not retry
    it. PartiQL's ExecuteTransaction likewise: its singleton statements' errors cancel it with
    TransactionCanceledException, their reasons in its cancellation codes
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.transactions.html).
    The (HTTP response, parsed answer) a `before-call` hook returns for it; None for any other fault."""
    import json

    from .sqs_deletes import _Answer

    code = getattr(error, "response", {}).get("Error", {}).get("Code")
    if call not in _TRANSACTIONS or code != THROTTLES["dynamodb"][0]:
        return None
    try:
        items = len(json.loads((request or {}).get("body") or b"{}").get(_TRANSACTIONS[call]) or [None])
    except (TypeError, ValueError, AttributeError):
        items = 1
    reasons = [dict(_THROTTLED_REASONS[0])] + [dict(_THROTTLED_REASONS[1]) for _ in range(items - 1)]
    message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(r['Code'] for r in reasons)}]"
    return _Answer(400), {"Error": {"Code": "TransactionCanceledException", "Message": message},
                          "CancellationReasons": reasons, "ResponseMetadata": {
                              "HTTPStatusCode": 400, "RequestId": "idem-throttled", "HTTPHeaders": {}, "RetryAttempts": 0}}


def resent_by_sdk(watch: Any, boundary: Any, visit: Any = None) -> bool:
    """Is a fault of `watch`'s plan at `boundary` a lost answer that the SDK resends (so the
    boundary's own crossing, once the SDK is done, raises nothing)? An exception after an AWS call,
    in a run of the check (`Watch.aws_errors`), or after a charge sent with Stripe's SDK itself."""
    plan = watch.plan.at_boundary(boundary, role_at(visit, boundary))  # or a second fault's plan (second_fault)
    if str(boundary.side) != "after" or str(plan.how) != "exception" or plan.outcome:
        return False
    if boundary.call == _CHARGE_CALL:
        return getattr(visit, "sdk_attempts", None) is not None
    return watch.aws_errors and boundary.call != _END_CALL


def lose_stripe_answer(answer: Any, current: Any, crossing: Any) -> None:
    """Called with each answer the loopback Stripe gives Stripe's SDK for a charge the handler sent
    itself: raise the APIConnectionError the SDK raises when a connection fails (it retries it, as
    the client's `max_network_retries` says, with the same Idempotency-Key: Stripe replays the saved
    answer, https://docs.stripe.com/api/idempotent_requests) when the fault plan loses this answer.
    `current` and `crossing` are idem.sim.boundary's."""
    import stripe

    running = current()
    if running is None:
        return
    watch, visit = running
    plan = watch.plan
    if getattr(visit, "sdk_attempts", None) is None or plan.at is None or plan.at.call != _CHARGE_CALL:
        return
    visit.sdk_attempts += 1
    if not visit.pending or visit.pending[-1] != plan.at or not resent_by_sdk(watch, plan.at, visit):
        return
    arrival = watch.arrivals[(plan.at, visit.work)] + 1
    if not plan.fails_on(arrival) or visit.sdk_attempts > plan.run:
        return
    visit.crossings.append(crossing(round(watch._t(), 3), plan.at, f"a lost answer (arrival {arrival}, the "
                                    f"SDK's attempt {visit.sdk_attempts}; Stripe's SDK resends)"))
    error = stripe.APIConnectionError(f"the answer to {_CHARGE_CALL} was lost (attempt {visit.sdk_attempts}): "
                                      "the request did its work", should_retry=True)
    error.idem_lost_answer = True  # type: ignore[attr-defined]
    raise error


def lose_answers(request: Any, response: Any) -> None:
    """Called with each answer moto gives: raise a lost answer when the running invocation's fault
    plan loses this attempt's answer (its call, its arrival, an attempt within the plan's run): the
    ReadTimeoutError of `lost_answer`.
    What the attempt did has landed: a write is noted as written, an effect counted."""
    from .writes import _PARAMS, note_effect_id, targets

    running = _HOOKS["current"]()
    if running is None or response is None:
        return
    watch, visit = running
    role = role_at(visit, visit.pending[-1]) if visit.pending else ""
    plan = watch.plan.at_boundary(visit.pending[-1], role) if visit.pending else watch.plan  # or its second plan's
    if plan.at is None or not visit.pending or visit.pending[-1] != plan.at or not resent_by_sdk(watch, plan.at, visit):
        return
    # counted when the SDK is done with the call: among its role's own, for a plan pinned to one
    arrival = (watch.role_arrivals[(plan.at, role, visit.work)] if plan.role is not None
               else watch.arrivals[(plan.at, visit.work)]) + 1
    context = getattr(request, "context", None) or {}
    attempt = int((context.get("retries") or {}).get("attempt", 1))
    if not plan.fails_on(arrival) or attempt > plan.run:
        return
    landed = getattr(response, "status_code", 500) < 300
    if landed and plan.at.call in watch.effects:
        if _PARAMS in context:  # a write named as an effect: it is in the table, whatever comes next
            watch.__dict__.setdefault("writes", []).append((plan.at.call, visit.work,
                                                            targets(plan.at.call, context[_PARAMS])))
        elif not context.get("idem_fifo_publish"):  # a FIFO publish is counted where its queue delivers it
            watch.effect_counts[(plan.at.call, visit.work)] += 1
            note_effect_id(watch, visit, plan.at.call, _json(response))
    visit.crossings.append(_HOOKS["crossing"](round(watch._t(), 3), plan.at,
                                    f"a lost answer (arrival {arrival}, the SDK's attempt {attempt}; botocore resends)"))
    raise lost_answer(plan.at.call, attempt, landed)


def role_at(visit: Any, boundary: Any) -> str:
    """What the request at `boundary` of `visit` asked (idem.sim.platform.call_roles, kept in `Visit.roles`);
    "" for none."""
    roles = getattr(visit, "roles", None)
    return roles.get(boundary, "") if isinstance(roles, dict) else ""


def _json(response: Any) -> dict[str, Any]:
    """The answer's body as JSON (the JSON protocols' answers), or {}."""
    import json

    try:
        found = json.loads(getattr(response, "content", b"") or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def install(current: Any, crossing: Any) -> None:
    """Put `lose_answers` where moto's answers leave it, once per process; `current` and `crossing`
    are idem.sim.boundary's (the running invocation, a crossing's record)."""
    _HOOKS.update(current=current, crossing=crossing)
    _wrap_stubber()


@functools.cache
def _wrap_stubber() -> None:
    from moto.core.botocore_stubber import BotocoreStubber

    real = BotocoreStubber.__call__

    @functools.wraps(real)
    def answered(self: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        response = real(self, event_name, request, **kwargs)
        lose_answers(request, response)
        return response

    BotocoreStubber.__call__ = answered  # type: ignore[method-assign]
