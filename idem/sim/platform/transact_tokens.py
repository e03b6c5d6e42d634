"""DynamoDB's ClientRequestToken on TransactWriteItems, which moto ignores.

AWS: "Providing a ClientRequestToken makes the call to TransactWriteItems idempotent, meaning that
multiple identical calls have the same effect as one single call. [...] A client request token is
valid for 10 minutes after the first request that uses it is completed. After 10 minutes, any request
with the same client token is treated as a new request. [...] If you submit a request with the same
client token but a change in other parameters within the 10-minute idempotency window, DynamoDB
returns an IdempotentParameterMismatch exception."
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html)

botocore fills the token itself when the caller gives none (an idempotencyToken member) and resends
the same request after a lost answer; a handler may give its own (an order's key). Here a transaction
that succeeded is remembered by its token, with its parameters and when it completed (the clock the
request is served under: the check's virtual clock inside an invocation). Within 10 minutes the same
token with the same parameters succeeds again without writing; with other parameters it is refused
with IdempotentParameterMismatchException. A cancelled transaction wrote nothing, and is not
remembered: its resend is evaluated afresh (the documents say nothing more of it). Tokens are kept by
the table a transaction names first (moto's table object, weakly: a table deleted and made again under
its name, as the check's worlds reuse names, remembers nothing of the old one's tokens).
"""
from __future__ import annotations

import functools
import json
import time
import weakref
from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import DynamodbException, MockValidationException
from moto.dynamodb.responses import DynamoHandler

#: "valid for 10 minutes after the first request that uses it is completed" (the page above)
TOKEN_WINDOW_SECONDS = 600.0
#: ClientRequestToken: "Length Constraints: Minimum length of 1. Maximum length of 36." (the page above;
#: botocore's model says the same, and checks only the minimum): a longer token is refused, and moto
#: takes it
TOKEN_MAX_LENGTH = 36

#: per table object: token -> (the request's other parameters, when it completed)
_completed: weakref.WeakKeyDictionary[Any, dict[str, tuple[str, float]]] = weakref.WeakKeyDictionary()
_installed: list[Any] = []


class IdempotentParameterMismatch(DynamodbException):
    """The error DynamoDB answers a reused token with other parameters (HTTP 400)."""

    error_type = "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"

    def __init__(self) -> None:
        super().__init__(self.error_type, "Specified idempotent token was used with different request parameters "
                                          "within the idempotency window")


def _first_table(handler: Any, items: list[dict[str, Any]]) -> Any:
    """moto's table object for the first table the transaction names (None if there is none)."""
    for entry in items:
        name = next(iter(entry.values()), {}).get("TableName") if isinstance(entry, dict) and entry else None
        if name:
            return handler.dynamodb_backend.tables.get(name)
    return None


def remember_transaction_tokens() -> None:
    """Wrap moto's TransactWriteItems so a ClientRequestToken behaves as DynamoDB documents. Safe to
    call twice."""
    if _installed:
        return
    original = DynamoHandler.transact_write_items
    _installed.append(original)

    @functools.wraps(original)
    def transact_write_items(self: Any) -> Any:
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        if len(str(token)) > TOKEN_MAX_LENGTH:  # as DynamoDB refuses it: a validation error, nothing written
            raise MockValidationException(
                f"1 validation error detected: Value '{token}' at 'clientRequestToken' failed to satisfy "
                f"constraint: Member must have length less than or equal to {TOKEN_MAX_LENGTH}")
        table = _first_table(self, self.body.get("TransactItems") or [])
        if table is None:
            return original(self)  # moto answers what is wrong with the request
        tokens = _completed.setdefault(table, {})
        parameters = json.dumps({k: v for k, v in self.body.items() if k != "ClientRequestToken"}, sort_keys=True)
        now = time.time()
        seen = tokens.get(str(token))
        if seen is not None and now - seen[1] <= TOKEN_WINDOW_SECONDS:
            if seen[0] != parameters:
                raise IdempotentParameterMismatch()
            return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
        answer = original(self)  # raises when the transaction is cancelled: nothing to remember
        tokens[str(token)] = (parameters, time.time())
        return answer

    DynamoHandler.transact_write_items = transact_write_items  # type: ignore[method-assign]


def forget_transaction_tokens() -> None:
    """Every remembered token gone (a test's fresh start)."""
    _completed.clear()
