"""Stripe's error answers, and the faults a test scripts request by request.

An answer is what the loopback sends back (`Answer`); an error is Stripe's body
(https://docs.stripe.com/api/errors); a fault (`FAULTS`) is a scripted answer: before execution
(nothing saved), after it (saved for the key), or what the payment does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERRORS = "https://docs.stripe.com/api/errors"


@dataclass
class StripeError(Exception):
    """An error answer, in Stripe's body (https://docs.stripe.com/api/errors): `type` is one of
    api_error, card_error, idempotency_error, invalid_request_error; `code`, `decline_code`,
    `param` when they apply. `saved`: whether the idempotency layer keeps it for the key."""

    status: int
    type: str
    message: str
    code: str | None = None
    param: str | None = None
    decline_code: str | None = None
    payment_intent: dict[str, Any] | None = None
    saved: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type, "message": self.message}
        for name in ("code", "param", "decline_code", "payment_intent"):
            if getattr(self, name) is not None:
                error[name] = getattr(self, name)
        if self.code:
            error["doc_url"] = f"https://docs.stripe.com/error-codes/{self.code.replace('_', '-')}"
        return {"error": error}

    def as_answer(self) -> Answer:
        return Answer(self.status, self.body(), dict(self.headers))


@dataclass
class Answer:
    """One HTTP answer: status, JSON body, headers; `drop`: close the connection without answering."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


# -- faults a test can script, request by request -------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """A scripted answer. `stage`: "before" execution (nothing saved, no money moves) or "after"
    (executes and is saved for the key, as Stripe saves every answer once execution begins) or
    "outcome" (what the payment does: a decline, authentication, processing)."""

    name: str
    stage: str
    status: int = 200
    type: str = ""
    code: str | None = None
    decline_code: str | None = None
    message: str = ""


#: Every fault `StripeAccount.inject` takes, by name. The bodies are Stripe's
#: (https://docs.stripe.com/api/errors, https://docs.stripe.com/error-codes).
FAULTS: dict[str, Fault] = {f.name: f for f in (
    # Rate limits: 429 with code rate_limit; older answers carried it on a 400 ("Rate limits were
    # previously coded as 400's with code 'rate_limit'": stripe-python 16, _api_requestor.py,
    # which raises RateLimitError for both). Not saved: the limiter refuses a request before its
    # endpoint executes, and "We save results only after the execution of an endpoint begins"
    # (https://docs.stripe.com/idempotency; the page does not name 429s: this follows from that rule).
    Fault("rate_limit", "before", 429, "invalid_request_error", "rate_limit",
          message="Too many requests hit the API too quickly."),
    Fault("rate_limit_400", "before", 400, "invalid_request_error", "rate_limit",
          message="Too many requests hit the API too quickly."),
    # lock_timeout: the object is locked by another request; a 429 (stripe-ruby v5.1.0: "Retry requests
    # on a 429 that's a lock timeout", https://github.com/stripe/stripe-ruby/releases/tag/v5.1.0), sent
    # with Stripe-Should-Retry: true (stripe-python 16 _http_client.py: "advise us to retry (eg; in
    # cases of lock timeouts)"), so the SDK retries it itself when allowed retries. Not executed.
    Fault("lock_timeout", "before", 429, "invalid_request_error", "lock_timeout",
          message="This object cannot be accessed right now because another API request or Stripe "
                  "process is currently accessing it."),
    # A 500 after execution began: saved, replayed to every retry (IDEMPOTENCY: "including 500 errors").
    Fault("api_error", "after", 500, "api_error", message="An unknown error occurred"),
    # Unavailable before executing (a 503 from the edge): nothing saved, a retry executes.
    Fault("unavailable", "before", 503, "api_error", message="The service is temporarily unavailable"),
    # Another request with the same key in flight: 409, nothing saved (https://docs.stripe.com/api/errors:
    # "409 Conflict: The request conflicts with another request (perhaps due to using the same idempotent key)").
    Fault("in_flight", "before", 409, "idempotency_error", message=(
        "There is currently another in-progress request using this Stripe-Idempotency-Key.")),
    Fault("invalid_request", "before", 400, "invalid_request_error", "parameter_invalid_integer",
          message="Invalid integer"),
    # Lost connections: before (never executed) or after execution (money moved, the answer saved).
    Fault("drop_before", "before", 0),
    Fault("drop_after", "after", 0),
    # What the payment does (card_error 402, or a status): https://docs.stripe.com/declines/codes.
    Fault("card_declined", "outcome", 402, "card_error", "card_declined", "generic_decline",
          "Your card was declined."),
    Fault("insufficient_funds", "outcome", 402, "card_error", "card_declined", "insufficient_funds",
          "Your card has insufficient funds."),
    Fault("expired_card", "outcome", 402, "card_error", "expired_card", "expired_card", "Your card has expired."),
    Fault("authentication_required", "outcome", 402, "card_error", "authentication_required",
          "authentication_required", "Your card was declined. This transaction requires authentication."),
    Fault("requires_action", "outcome", 200),
    Fault("processing", "outcome", 200),
)}
#: The local runtime's provider outcomes (idem.sim.boundary) as faults.
OUTCOMES = {"provider_down": "unavailable", "provider_500": "api_error", "provider_409": "in_flight",
            "declined": "card_declined", "provider_429": "rate_limit", "needs_authentication": "authentication_required"}


def _before(fault: Fault) -> Answer:
    if fault.status == 0:
        return Answer(0, {}, drop=True)
    headers = {"Stripe-Should-Retry": "true"} if fault.code == "lock_timeout" else {}
    return StripeError(fault.status, fault.type, fault.message, code=fault.code, headers=headers).as_answer()



def _missing(kind: str, object_id: str, param: str, other_mode: str | None) -> StripeError:
    """Stripe's answer for an id that does not exist (code resource_missing; 404 for the id in the
    path, 400 for one passed as a parameter), naming the other mode when it has the object
    (https://docs.stripe.com/error-codes/resource-missing)."""
    message = f"No such {kind}: '{object_id}'"
    if other_mode:
        mode = "live" if other_mode == "test" else "test"
        message += f"; a similar object exists in {other_mode} mode, but a {mode} mode key was used to make this request."
    return StripeError(404 if param in ("id", "intent") else 400, "invalid_request_error", message,
                       code="resource_missing", param=param)
