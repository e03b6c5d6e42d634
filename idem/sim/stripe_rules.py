"""Stripe's API v1 rules for the loopback Stripe (idem.sim.stripe_server), without HTTP.

One account, in two modes. Every rule is cited to Stripe's documentation beside the code that
keeps it (pages read 2026-12). The money itself is the provider stand-in's
(`idem.core.provider.Provider`): a PaymentIntent that moves money is one charge of the stand-in,
so `idem check` and the tests count charges where they always did.

What it models:
- keys and modes: `sk_test_`/`rk_test_` keys see the test objects, `sk_live_`/`rk_live_` keys the
  live ones; an object of one mode does not exist for the other (`resource_missing`, with Stripe's
  "a similar object exists in test mode" message). Test PaymentMethods (`pm_card_visa`, ...) exist
  in test mode only. Restricted keys (`rk_`) have only the permissions given them (`RESTRICTED`).
- customers, saved PaymentMethods (attached to a customer), `invoice_settings.default_payment_method`;
- PaymentIntents created and confirmed in one call, off-session, with their statuses: succeeded,
  processing (settled later: `StripeAccount.settle`), requires_action, requires_payment_method;
- idempotency: the first answer saved once execution begins, replayed for 24 h, 500s included;
  the same key with other parameters is `idempotency_error`; nothing saved for a request that fails
  validation, is rate limited, or meets its key in flight (409). The parameters compared are all
  of them, metadata included: one key sent with another `metadata[version_id]` is an idempotency_error;
  keys are per mode (a test key's and a live key's requests never meet);
- errors with Stripe's `type`, `code`, `decline_code`, `param`; faults scripted per request (`inject`);
- search (`metadata['k']:'v'`, `status:`, `customer:`, `created>`... joined by AND) with a lag; lists
  with `created[gte]`...; refunds.
- a rate limiter at Stripe's documented default, off unless set (`RateLimiter.documented()`).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..core.errors import CardDeclined, ProviderError
from ..core.provider import Provider
from .stripe_shapes import unknown_parameters

__all__ = ["Answer", "Fault", "FAULTS", "RESTRICTED", "RateLimiter", "StripeAccount", "StripeError",
           "TEST_PAYMENT_METHODS", "key_mode"]

IDEMPOTENCY = "https://docs.stripe.com/api/idempotent_requests"
ERRORS = "https://docs.stripe.com/api/errors"
#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
MAX_KEY_CHARS = 255
#: Search and list pages: "limit ... between 1 and 100, and the default is 10"
#: (https://docs.stripe.com/api/pagination, https://docs.stripe.com/api/payment_intents/search).
DEFAULT_LIMIT, MAX_LIMIT = 10, 100
#: Metadata: "up to 50 keys, with key names up to 40 characters long and values up to 500
#: characters long" (https://docs.stripe.com/api/metadata).
MAX_METADATA_KEYS, MAX_METADATA_KEY, MAX_METADATA_VALUE = 50, 40, 500

#: Test PaymentMethods: in test mode each names a card with a known behaviour
#: (https://docs.stripe.com/testing#cards, #declined-payments, #authentication-and-setup).
#: Value: (brand, last4, what a charge does). They exist in test mode only.
TEST_PAYMENT_METHODS: dict[str, tuple[str, str, str]] = {
    "pm_card_visa": ("visa", "4242", "succeeds"),
    "pm_card_mastercard": ("mastercard", "4444", "succeeds"),
    "pm_card_visa_chargeDeclined": ("visa", "0002", "card_declined/generic_decline"),
    "pm_card_chargeDeclined": ("visa", "0002", "card_declined/generic_decline"),
    "pm_card_chargeDeclinedInsufficientFunds": ("visa", "9995", "card_declined/insufficient_funds"),
    "pm_card_chargeDeclinedExpiredCard": ("visa", "0069", "expired_card/expired_card"),
    # 3D Secure required on every payment: off-session, a decline with authentication_required.
    "pm_card_authenticationRequired": ("visa", "3184", "authentication_required"),
    "pm_card_threeDSecure2Required": ("visa", "3220", "authentication_required"),
}


def key_mode(api_key: str) -> str | None:
    """The mode a secret or restricted key acts in: "test", "live", or None (not a key).
    Test keys start sk_test_/rk_test_, live ones sk_live_/rk_live_ (https://docs.stripe.com/keys)."""
    for prefix in ("sk_", "rk_"):
        for mode in ("test", "live"):
            if api_key.startswith(f"{prefix}{mode}_") and len(api_key) > len(prefix) + len(mode) + 1:
                return mode
    return None


#: What a restricted key may do unless told otherwise (`StripeAccount.restrict`): what the handler
#: needs and nothing more: PaymentIntents write (create) and read (retrieve, list, search).
#: Restricted keys carry per-resource None/Read/Write permissions (https://docs.stripe.com/keys#limit-access);
#: a request beyond them is refused with 403 (https://docs.stripe.com/api/errors: "403 Forbidden:
#: The API key doesn't have permissions to perform the request").
RESTRICTED: frozenset[str] = frozenset({"payment_intents:read", "payment_intents:write"})


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
            "declined": "card_declined"}


class RateLimiter:
    """Requests per second, counted in one-second windows of `clock` (time.monotonic by default):
    a global limit per mode and a per-endpoint one; search has its own.
    `documented()`: "Live mode: 100 operations; Sandbox: 25 operations ... API endpoints have a
    default limit of 25 requests per second ... Search API: 20 read operations per second"
    (https://docs.stripe.com/rate-limits). A limited request is answered 429 rate_limit and saves nothing."""

    def __init__(self, global_per_second: dict[str, int], endpoint_per_second: int,
                 search_per_second: int, clock: Callable[[], float] | None = None) -> None:
        import time

        self.global_per_second, self.endpoint_per_second = global_per_second, endpoint_per_second
        self.search_per_second = search_per_second
        self.clock = clock or time.monotonic
        self._counts: dict[tuple[str, str, int], int] = {}
        self._lock = threading.Lock()

    @classmethod
    def documented(cls, clock: Callable[[], float] | None = None) -> RateLimiter:
        return cls({"live": 100, "test": 25}, 25, 20, clock)

    def admit(self, mode: str, endpoint: str) -> bool:
        second = int(self.clock())
        limit = self.search_per_second if endpoint.endswith("/search") else self.endpoint_per_second
        with self._lock:
            if len(self._counts) > 10_000:
                self._counts = {k: v for k, v in self._counts.items() if k[2] >= second - 1}
            overall, own = (mode, "", second), (mode, endpoint, second)
            if self._counts.get(overall, 0) >= self.global_per_second[mode] or self._counts.get(own, 0) >= limit:
                return False
            self._counts[overall] = self._counts.get(overall, 0) + 1
            self._counts[own] = self._counts.get(own, 0) + 1
            return True


@dataclass
class Saved:
    """A key's first answer (IDEMPOTENCY): what was asked (fingerprint), what was answered, when."""

    fingerprint: str
    answer: Answer
    created: float


@dataclass
class Objects:
    """One mode's objects, by id."""

    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    payment_methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: intent id -> what search sees of it: (from when, the object then), one entry per change
    indexed: dict[str, list[tuple[float, dict[str, Any]]]] = field(default_factory=dict)


class StripeAccount:
    """One Stripe account's API, both modes, over the provider stand-in (the money).

    `outcome`: the local runtime's fault for the requests now being made (idem.sim.boundary);
    `inject(...)`: faults scripted for the next requests; `search_lag_seconds`: how long a new
    PaymentIntent stays out of search; `rate_limiter`: None (off) or a RateLimiter."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.modes = {"test": Objects(), "live": Objects()}
        self.outcome = "ok"
        self.search_lag_seconds = 0.0
        self.rate_limiter: RateLimiter | None = None
        self.replayed: dict[str, bool] = {}  # per idempotency key: was its last answer a replay?
        self.permissions: dict[str, frozenset[str]] = {}  # restricted key -> its permissions
        #: keys rolled or expired at Stripe: every request with one is answered 401
        self.revoked: set[str] = set()
        self._script: list[tuple[Fault, str, str, str | None]] = []  # (fault, method, path prefix, key)
        self._saved: dict[tuple[str, str], Saved] = {}
        self._in_flight: set[tuple[str, str]] = set()
        self._lock = threading.RLock()
        self._counters: dict[str, int] = {}
        self.failed: set[str] = set()  # processing PaymentIntents whose payment then failed: no money moved
        self.expired_keys: set[str] = set()  # API keys rolled and expired (idem.sim.stripe_keys.expire_api_key)

    # -- what tests set ---------------------------------------------------------------------------
    def inject(self, *faults: str, method: str = "POST", path: str = "/v1/payment_intents",
               key: str | None = None) -> None:
        """Answer the next requests to `method path` (a path prefix; with `key`, only those with that
        Idempotency-Key) with these faults, one each, in order (FAULTS names); then as usual."""
        for name in faults:
            if name not in FAULTS:
                raise ValueError(f"no fault {name!r}: one of {', '.join(sorted(FAULTS))}")
            self._script.append((FAULTS[name], method, path, key))

    def pending(self) -> list[str]:
        """The scripted faults not yet used."""
        with self._lock:
            return [fault.name for fault, *_ in self._script]

    def restrict(self, api_key: str, permissions: Iterable[str]) -> None:
        """Give a restricted key these permissions ("payment_intents:write", "customers:read", ...)."""
        self.permissions[api_key] = frozenset(permissions)

    def now(self) -> float:
        return self.provider.clock.now()

    # -- one request --------------------------------------------------------------------------------
    def handle(self, method: str, path: str, params: dict[str, Any], api_key: str,
               idempotency_key: str = "") -> Answer:
        """Answer one request (`params` decoded from the form or the query string)."""
        try:
            mode = self._authenticate(api_key)
            fault = self._next_fault(method, path, idempotency_key)
            if fault is not None and fault.stage == "before":
                return _before(fault)
            route, ids = _route(method, path)
            self._authorize(api_key, route)
            unknown = unknown_parameters(route, params)
            if unknown:
                # Stripe refuses parameters it does not know ("Raises exceptions on unrecognized
                # parameters passed to the API instead of silently allowing and ignoring them":
                # https://docs.stripe.com/changelog/2011-06-21/exceptions-unrecognized-api-parameters;
                # code parameter_unknown, "Received unknown parameter": stripe-python v4.0.1's notes).
                # The parameters known are stripe-python 16's typed ones (idem.sim.stripe_shapes).
                raise StripeError(400, "invalid_request_error", f"Received unknown parameter: {unknown[0]}",
                                  code="parameter_unknown", param=unknown[0])
            if self.rate_limiter is not None and not self.rate_limiter.admit(mode, route):
                return _before(FAULTS["rate_limit"])
            if method == "GET":
                answer = Answer(200, self._read(mode, route, ids, params))
                # A read saves nothing: a fault "after" it is its answer lost or replaced (a 500).
                return _before(fault) if fault is not None else answer
            return self._idempotent(mode, route, ids, params, idempotency_key, fault)
        except StripeError as error:
            return Answer(error.status, error.body(), error.headers)

    def _authenticate(self, api_key: str) -> str:
        mode = key_mode(api_key)
        if api_key in self.revoked:  # a rolled key (https://docs.stripe.com/keys#rolling-keys): 401
            raise StripeError(401, "invalid_request_error", "Expired API Key provided.", code="api_key_expired")
        if mode is None:  # 401 (https://docs.stripe.com/api/errors: "No valid API key provided")
            raise StripeError(401, "invalid_request_error", "Invalid API Key provided.", code="api_key_invalid"
                              if api_key else None)
        if api_key in self.expired_keys:  # "a deleted or expired key ... an authentication error" (https://docs.stripe.com/keys)
            raise StripeError(401, "invalid_request_error", f"Expired API Key provided: {api_key[:8]}***",
                              code="api_key_expired")
        return mode

    def _authorize(self, api_key: str, route: str) -> None:
        if not api_key.startswith("rk_"):
            return
        resource = route.split()[1].split("/")[2]
        need = f"{resource}:{'read' if route.startswith('GET') else 'write'}"
        allowed = self.permissions.get(api_key, RESTRICTED)
        if need not in allowed and not (need.endswith(":read") and f"{resource}:write" in allowed):
            raise StripeError(403, "invalid_request_error",
                              f"The provided key '{api_key[:12]}...' does not have the required permissions "
                              f"for this endpoint: it needs {resource} {need.split(':')[1]} access.")

    def _next_fault(self, method: str, path: str, key: str) -> Fault | None:
        with self._lock:
            for i, (fault, m, prefix, only) in enumerate(self._script):
                if m == method and path.startswith(prefix) and only in (None, key):
                    del self._script[i]
                    return fault
        if method == "POST" and path == "/v1/payment_intents" and self.outcome != "ok":
            return FAULTS[OUTCOMES.get(self.outcome, self.outcome)]  # a runtime outcome, or a FAULTS name
        return None

    # -- idempotency (IDEMPOTENCY, https://docs.stripe.com/idempotency) ------------------------------
    def _idempotent(self, mode: str, route: str, ids: list[str], params: dict[str, Any], key: str,
                    fault: Fault | None) -> Answer:
        if len(key) > MAX_KEY_CHARS:  # "Idempotency keys are up to 255 characters long."
            raise StripeError(400, "invalid_request_error",
                              f"Idempotency keys are up to {MAX_KEY_CHARS} characters long.")
        fingerprint = _fingerprint(route, ids, params)
        slot = (mode, key)
        if key:
            with self._lock:
                if slot in self._in_flight:  # another request holds the key: 409, nothing saved
                    return _before(FAULTS["in_flight"])
                seen = self._saved.get(slot)
                # "You can remove keys from the system automatically after they're at least 24
                # hours old. We generate a new request if a key is reused after the original is pruned."
                if seen is None or seen.created <= self._pruned_before():
                    self._in_flight.add(slot)
                    seen = None
                elif seen.fingerprint == fingerprint:
                    self.replayed[key] = True
            if seen is not None:
                if route == "POST /v1/payment_intents":
                    self._stand_in_again(mode, params, key)
                if seen.fingerprint != fingerprint:
                    # "The idempotency layer compares incoming parameters to those of the original
                    # request and errors if they're not the same" (https://docs.stripe.com/idempotency)
                    return StripeError(400, "idempotency_error", (
                        "Keys for idempotent requests can only be used with the same parameters they were "
                        f"first used with. Try using a key other than '{key}' if you meant to execute a "
                        "different request.")).as_answer()
                return _replay(seen.answer)
        try:
            try:
                answer = self._execute(mode, route, ids, params, key, fault)
            except StripeError as error:
                if not error.saved:  # "If incoming parameters fail validation ... no response is saved"
                    return error.as_answer()
                answer = error.as_answer()
            if fault is not None and fault.stage == "after" and fault.status:  # executed, then failed: a saved 500
                answer = StripeError(fault.status, fault.type, fault.message, code=fault.code).as_answer()
            if key:  # "saves the status code and body of the first request ... after endpoint execution begins"
                with self._lock:
                    self._saved[slot] = Saved(fingerprint, answer, self.now())
                    self.replayed[key] = False
            if fault is not None and fault.stage == "after" and not fault.status:
                return Answer(0, {}, drop=True)  # executed and saved; the answer is lost on the way
            return answer
        finally:
            with self._lock:
                self._in_flight.discard(slot)

    def _stand_in_again(self, mode: str, params: dict[str, Any], key: str) -> None:
        """Tell the stand-in of a request this layer answers from its saved answers: the stand-in
        replays (or refuses) it too, as it would have had it been asked alone, so a run over the
        loopback and a run over the stand-in keep the same books, down to the ids."""
        try:
            self.provider.charge(**_stand_in_request(mode, params, key))
        except (ProviderError, StripeError, ValueError):
            pass

    def _pruned_before(self) -> float:
        retention = self.provider.retention_seconds
        return -1.0 if retention is None else self.now() - retention

    # -- writes ------------------------------------------------------------------------------------------
    def _execute(self, mode: str, route: str, ids: list[str], params: dict[str, Any], key: str,
                 fault: Fault | None) -> Answer:
        if route == "POST /v1/payment_intents":
            return self._create_intent(mode, params, key, fault)
        if route == "POST /v1/customers":
            return Answer(200, self.create_customer(mode, **_customer_fields(params)))
        if route == "POST /v1/customers/{id}":
            return Answer(200, self._update_customer(mode, ids[0], params))
        if route == "POST /v1/payment_methods/{id}/attach":
            return Answer(200, self.attach(mode, ids[0], _required(params, "customer")))
        if route == "POST /v1/refunds":
            return Answer(200, self._refund(mode, params))
        raise StripeError(404, "invalid_request_error", f"Unrecognized request URL ({route}).")  # pragma: no cover

    def create_customer(self, mode: str, *, email: str | None = None, name: str | None = None,
                        metadata: dict[str, str] | None = None, description: str | None = None,
                        customer_id: str | None = None) -> dict[str, Any]:
        """A customer (https://docs.stripe.com/api/customers/create); `customer_id` chosen by a test."""
        if customer_id is not None and not re.fullmatch(r"cus_\w+", customer_id):
            raise ValueError(f"a customer id is cus_ and letters, digits or underscores, not {customer_id!r}")
        with self._lock:
            if customer_id in self.modes[mode].customers:
                raise ValueError(f"customer {customer_id} exists already in {mode} mode")
            customer = _customer(customer_id or self._new_id("cus"), self.now(), mode, email=email, name=name,
                                 metadata=metadata or {}, description=description)
            self.modes[mode].customers[customer["id"]] = customer
            return dict(customer)

    def create_payment_method(self, mode: str, *, brand: str = "visa", last4: str = "4242",
                              behaviour: str = "succeeds", type: str = "card") -> dict[str, Any]:
        """A PaymentMethod, as a customer's card collected on-session (SetupIntent, Elements) leaves
        one. `behaviour`: what charging it does ("succeeds", "card_declined/<decline_code>",
        "authentication_required", "processing": a bank debit whose result comes later)."""
        with self._lock:
            method = _payment_method(self._new_id("pm"), self.now(), mode, type, brand, last4)
            method["_behaviour"], method["_seq"] = behaviour, self._next_seq()
            self.modes[mode].payment_methods[method["id"]] = method
            return _public(method)

    def attach(self, mode: str, payment_method: str, customer: str) -> dict[str, Any]:
        """Attach a PaymentMethod to a customer (https://docs.stripe.com/api/payment_methods/attach).
        A test PaymentMethod (`pm_card_visa`) makes a new PaymentMethod each time it is used."""
        with self._lock:
            self._customer(mode, customer, param="customer")
            method = self._payment_method(mode, payment_method)
            if method.get("customer") not in (None, customer):  # already another customer's
                raise StripeError(400, "invalid_request_error",
                                  "The payment method you provided has already been attached to a customer.",
                                  code="payment_method_unexpected_state", param="payment_method")
            if payment_method in TEST_PAYMENT_METHODS:
                method = dict(method, id=self._new_id("pm"), created=int(self.now()), _seq=self._next_seq())
                self.modes[mode].payment_methods[method["id"]] = method
            method["customer"] = customer
            return _public(method)

    def _update_customer(self, mode: str, customer_id: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            customer = self._customer(mode, customer_id, param="id")
            default = (params.get("invoice_settings") or {}).get("default_payment_method")
            if default:
                method = self._payment_method(mode, default, param="invoice_settings[default_payment_method]")
                if method.get("customer") != customer_id:
                    # https://docs.stripe.com/api/customers/update#update_customer-invoice_settings-default_payment_method:
                    # "ID of a payment method that's attached to the customer"
                    raise StripeError(400, "invalid_request_error",
                                      f"The customer does not have a payment method with the ID {default}. The "
                                      "payment method must be attached to the customer.",
                                      param="invoice_settings[default_payment_method]")
                customer["invoice_settings"]["default_payment_method"] = default
            customer["metadata"].update(params.get("metadata") or {})
            for name in ("email", "name", "description"):
                if name in params:
                    customer[name] = params[name]
            return dict(customer)

    def _create_intent(self, mode: str, params: dict[str, Any], key: str, fault: Fault | None) -> Answer:
        """Create and confirm a PaymentIntent (https://docs.stripe.com/api/payment_intents/create).
        Validation first: nothing of a refused request is saved."""
        amount = _integer(params, "amount")
        if amount < 1:  # "A positive integer representing how much to charge in the smallest currency unit"
            raise StripeError(400, "invalid_request_error", "This value must be greater than or equal to 1.",
                              code="parameter_invalid_integer", param="amount")
        currency = str(_required(params, "currency")).lower()
        metadata = _metadata(params.get("metadata"))
        confirm, off_session = _boolean(params, "confirm"), _boolean(params, "off_session")
        if off_session and not confirm:
            # off_session: "This parameter can only be used with confirm=true."
            raise StripeError(400, "invalid_request_error",
                              "You can only pass `off_session` when `confirm` is true.", param="off_session")
        customer_id = params.get("customer")
        method_id = params.get("payment_method")
        with self._lock:
            if customer_id:
                self._customer(mode, customer_id, param="customer")
            method = self._payment_method(mode, method_id, param="payment_method") if method_id else None
            if method is not None and customer_id and method.get("customer") != customer_id \
                    and method_id not in TEST_PAYMENT_METHODS:
                # A customer is charged with a method saved to that customer (attach it first:
                # https://docs.stripe.com/payments/save-and-reuse). Stripe's message, as reported in
                # https://github.com/flutter-stripe/flutter_stripe/issues/379 (paymentIntents.create).
                raise StripeError(400, "invalid_request_error",
                                  f"The customer does not have a payment method with the ID {method_id}. "
                                  "The payment method must be attached to the customer.", param="payment_method")
            if method is not None and method.get("customer") is None and method.get("_used") \
                    and method_id not in TEST_PAYMENT_METHODS:
                # A method never attached to a customer is good for one payment (Stripe's message, as
                # reported in https://github.com/stripe/stripe-react-native/issues/1170).
                raise StripeError(400, "invalid_request_error", (
                    "The provided PaymentMethod was previously used with a PaymentIntent without Customer "
                    "attachment, shared with a connected account without Customer attachment, or was detached "
                    "from a Customer. It may not be used again. To use a PaymentMethod multiple times, you must "
                    "attach it to a Customer first."), param="payment_method")
            if confirm and method is None:
                raise StripeError(400, "invalid_request_error", (
                    "You cannot confirm this PaymentIntent because it's missing a payment method. Update the "
                    "PaymentIntent with a payment method and then confirm it again."),
                    code="payment_intent_unexpected_state")
        if method is not None and confirm:
            method["_used"] = True
        behaviour = _behaviour(method, fault, off_session) if confirm else "requires_confirmation"
        if fault is not None and fault.name == "api_error":
            behaviour = "succeeds"  # a 500 after execution began: the money moved, the caller never heard
        # The money, once: the stand-in records the charge, and the key's answer (a decline, or any
        # answer that moves no money, as its "declined"); its rules agree with these (same clock, same
        # retention), so it executes exactly when this layer does.
        moves = behaviour in ("succeeds", "processing")
        charge_id = None
        try:
            made = self.provider.charge(**_stand_in_request(mode, params, key), outcome="ok" if moves else "declined")
            charge_id = made.id if moves else None
        except CardDeclined:
            pass
        except ProviderError as refused:  # the stand-in's own refusal: not Stripe's, and not saved
            raise StripeError(refused.http_status, "api_error", str(refused)) from refused
        status = {"succeeds": "succeeded", "processing": "processing", "requires_action": "requires_action",
                  "requires_confirmation": "requires_confirmation"}.get(behaviour, "requires_payment_method")
        with self._lock:
            intent_id = "pi_" + charge_id.removeprefix("ch_") if charge_id else self._new_id("pi")
            intent = _intent(intent_id, self.now(), mode, amount=amount, currency=currency, customer=customer_id,
                             payment_method=method["id"] if method else None, metadata=metadata, status=status,
                             description=params.get("description"))
            if moves:
                intent["latest_charge"] = "ch_" + intent_id.removeprefix("pi_")
                intent["amount_received"] = amount if status == "succeeded" else 0
            if status == "requires_action":
                intent["next_action"] = {"type": "use_stripe_sdk", "use_stripe_sdk": {}}
            declined = FAULTS.get(behaviour.split("/")[0])
            if declined is not None and declined.status == 402:
                decline_code = behaviour.split("/")[1] if "/" in behaviour else declined.decline_code
                error = {"type": "card_error", "code": declined.code, "decline_code": decline_code,
                         "message": declined.message, "payment_method": _public(method) if method else None}
                intent["last_payment_error"] = error
                intent["payment_method"] = None  # a failed payment detaches the method from the intent
            intent["_seq"] = self._next_seq()
            self.modes[mode].intents[intent_id] = intent
            public = _public(intent)
            self._index(mode, public)
        if declined is not None and declined.status == 402:
            # A decline is a 402 card_error carrying the PaymentIntent, now requires_payment_method
            # (https://docs.stripe.com/api/errors: payment_intent, "The PaymentIntent object for errors
            # returned on a request involving a PaymentIntent"); saved like any answer.
            raise StripeError(402, "card_error", declined.message, code=declined.code,
                              decline_code=intent["last_payment_error"]["decline_code"],
                              payment_intent=public, saved=True)
        return Answer(200, public)

    def settle(self, intent_id: str, succeeded: bool, mode: str = "test") -> dict[str, Any]:
        """A `processing` PaymentIntent's result arrives: succeeded, or back to requires_payment_method.
        "the PaymentIntent moves to processing for asynchronous payment methods, such as bank debits.
        These types of payment methods can take up to a few days to process"; a failed attempt leaves
        it requires_payment_method, "until a payment method is attached"
        (https://docs.stripe.com/payments/paymentintents/lifecycle)."""
        with self._lock:
            intent = self._intent(mode, intent_id)
            if intent["status"] != "processing":
                raise ValueError(f"{intent_id} is {intent['status']}, not processing")
            if succeeded:
                intent.update(status="succeeded", amount_received=intent["amount"])
            else:
                intent.update(status="requires_payment_method", latest_charge=intent["latest_charge"],
                              last_payment_error={"type": "card_error", "code": "payment_method_provider_decline",
                                                  "message": "The payment failed."})
                self.failed.add(intent_id)
                self.provider.fail("ch_" + intent_id.removeprefix("pi_"))  # the stand-in: no money moved
            public = _public(intent)
            self._index(mode, public)
            return public

    def _index(self, mode: str, intent: dict[str, Any]) -> None:
        """Search sees this version of the PaymentIntent once `search_lag_seconds` have passed."""
        self.modes[mode].indexed.setdefault(intent["id"], []).append((self.now() + self.search_lag_seconds, intent))

    def _refund(self, mode: str, params: dict[str, Any]) -> dict[str, Any]:
        """Refund a PaymentIntent's charge (https://docs.stripe.com/api/refunds/create): all of what is
        left unless `amount` says less."""
        intent_id = params.get("payment_intent")
        if not intent_id and not params.get("charge"):
            raise StripeError(400, "invalid_request_error", "One of `charge` or `payment_intent` is required.")
        with self._lock:
            if not intent_id:
                intent_id = "pi_" + str(params["charge"]).removeprefix("ch_")
            intent = self._intent(mode, intent_id, param="payment_intent")
            if intent["status"] != "succeeded":
                raise StripeError(400, "invalid_request_error",
                                  f"This PaymentIntent ({intent_id}) does not have a successful charge to refund.",
                                  code="charge_not_refundable" if intent["status"] != "processing" else None,
                                  param="payment_intent")
            refunded = sum(r["amount"] for r in self.modes[mode].refunds.values()
                           if r["payment_intent"] == intent_id and r["status"] == "succeeded")
            left = intent["amount_received"] - refunded
            amount = _integer(params, "amount") if "amount" in params else left
            if left <= 0:
                raise StripeError(400, "invalid_request_error",
                                  f"Charge {intent['latest_charge']} has already been refunded.",
                                  code="charge_already_refunded")
            if amount < 1 or amount > left:
                raise StripeError(400, "invalid_request_error",
                                  f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})",
                                  code="amount_too_large" if amount > left else "parameter_invalid_integer",
                                  param="amount")
            refund = _refund(self._new_id("re"), self.now(), intent, amount, _metadata(params.get("metadata")),
                             params.get("reason"))
            refund["_seq"] = self._next_seq()
            self.modes[mode].refunds[refund["id"]] = refund
            return _public(refund)

    # -- reads ---------------------------------------------------------------------------------------------
    def _read(self, mode: str, route: str, ids: list[str], params: dict[str, Any]) -> dict[str, Any]:
        objects = self.modes[mode]
        with self._lock:
            if route == "GET /v1/customers/{id}":
                return dict(self._customer(mode, ids[0], param="id"))
            if route == "GET /v1/payment_methods/{id}":
                return _public(self._payment_method(mode, ids[0], param="id"))
            if route in ("GET /v1/customers/{id}/payment_methods", "GET /v1/payment_methods"):
                # https://docs.stripe.com/api/payment_methods/customer_list and /api/payment_methods/list
                # (the latter by `customer`): a customer's saved methods, newest first, by `type`.
                owner = ids[0] if ids else _required(params, "customer")
                self._customer(mode, owner, param="id" if ids else "customer")
                found = [m for m in objects.payment_methods.values() if m.get("customer") == owner
                         and params.get("type", m["type"]) == m["type"]]
                url = f"/v1/customers/{owner}/payment_methods" if ids else "/v1/payment_methods"
                return _page(url, [_public(m) for m in sorted(found, key=_newest_first)], params)
            if route == "GET /v1/payment_intents/{id}":
                return _public(self._intent(mode, ids[0], param="intent"))
            if route == "GET /v1/payment_intents":
                return _page("/v1/payment_intents", [_public(i) for i in self._listed(objects, params)], params)
            if route == "GET /v1/payment_intents/search":
                return self._search(objects, params)
            if route == "GET /v1/refunds":
                found = [r for r in objects.refunds.values()
                         if params.get("payment_intent") in (None, r["payment_intent"])]
                return _page("/v1/refunds", [_public(r) for r in sorted(found, key=_newest_first)], params)
            if route == "GET /v1/refunds/{id}":
                if ids[0] not in objects.refunds:
                    raise _missing("refund", ids[0], "id", self._other_mode_has(mode, "refunds", ids[0]))
                return _public(objects.refunds[ids[0]])
        raise StripeError(404, "invalid_request_error", f"Unrecognized request URL (GET: {route}).")

    def _listed(self, objects: Objects, params: dict[str, Any]) -> list[dict[str, Any]]:
        """https://docs.stripe.com/api/payment_intents/list: newest first; `created` as a timestamp
        or with gt/gte/lt/lte; `customer`."""
        created = params.get("created")
        bounds = created if isinstance(created, dict) else ({"eq": created} if created is not None else {})
        tests = {"gt": int.__gt__, "gte": int.__ge__, "lt": int.__lt__, "lte": int.__le__, "eq": int.__eq__}
        found = []
        for intent in objects.intents.values():
            if params.get("customer") not in (None, intent["customer"]):
                continue
            if all(tests[op](intent["created"], _as_int(value, f"created[{op}]")) for op, value in bounds.items()
                   if op in tests):
                found.append(intent)
        return sorted(found, key=_newest_first)

    def _search(self, objects: Objects, params: dict[str, Any]) -> dict[str, Any]:
        """https://docs.stripe.com/api/payment_intents/search and https://docs.stripe.com/search:
        clauses joined by AND (OR too, not mixed); "Don't use search for read-after-write flows ...
        Under normal operating conditions, data is searchable in under 1 minute. Propagation of new
        or updated data could be delayed during an outage"; the API reference adds "can be up to an
        hour behind during outages" (search_lag_seconds models the delay, for new PaymentIntents and
        for changes: search finds, and answers, the version it has indexed; retrieve and list are not
        delayed: "use the various list APIs ... These APIs aren't subject to the availability delay")."""
        query = str(params.get("query") or "")
        clauses, joiner = _parse_query(query)
        now = self.now()
        seen = [[version for since, version in versions if since <= now] for versions in objects.indexed.values()]
        found = [versions[-1] for versions in seen if versions
                 and (all if joiner == "AND" else any)(_matches(versions[-1], c) for c in clauses)]
        found.sort(key=lambda i: _newest_first(objects.intents[i["id"]]))
        limit = _limit(params)
        start = int(params.get("page") or 0) if str(params.get("page") or "0").isdigit() else 0
        page = found[start:start + limit]
        more = start + limit < len(found)
        return {"object": "search_result", "url": "/v1/payment_intents/search", "has_more": more,
                "next_page": str(start + limit) if more else None, "data": [_public(i) for i in page]}

    # -- lookups with Stripe's missing-object errors ----------------------------------------------------
    def _customer(self, mode: str, customer_id: str, param: str) -> dict[str, Any]:
        found = self.modes[mode].customers.get(customer_id)
        if found is None:
            raise _missing("customer", customer_id, param, self._other_mode_has(mode, "customers", customer_id))
        return found

    def _payment_method(self, mode: str, method_id: str, param: str = "payment_method") -> dict[str, Any]:
        found = self.modes[mode].payment_methods.get(method_id)
        if found is None and method_id in TEST_PAYMENT_METHODS and mode == "test":
            brand, last4, behaviour = TEST_PAYMENT_METHODS[method_id]
            found = _payment_method(method_id, self.now(), mode, "card", brand, last4)
            found["_behaviour"], found["_seq"] = behaviour, self._next_seq()
            self.modes[mode].payment_methods[method_id] = found
        if found is None:
            elsewhere = self._other_mode_has(mode, "payment_methods", method_id) or \
                ("test" if mode == "live" and method_id in TEST_PAYMENT_METHODS else None)
            raise _missing("PaymentMethod", method_id, param, elsewhere)
        return found

    def _intent(self, mode: str, intent_id: str, param: str = "intent") -> dict[str, Any]:
        found = self.modes[mode].intents.get(intent_id)
        if found is None:
            raise _missing("payment_intent", intent_id, param, self._other_mode_has(mode, "intents", intent_id))
        return found

    def _other_mode_has(self, mode: str, kind: str, object_id: str) -> str | None:
        """The other mode's name when it has this object (for Stripe's message), else None."""
        other = "live" if mode == "test" else "test"
        return other if object_id in getattr(self.modes[other], kind) else None

    def _next_seq(self) -> int:
        self._counters["seq"] = self._counters.get("seq", 0) + 1
        return self._counters["seq"]

    def _new_id(self, prefix: str) -> str:
        self._counters[prefix] = self._counters.get(prefix, 0) + 1
        tag = {"pi": "unpaid"}.get(prefix, "loop")
        return f"{prefix}_{tag}{self._counters[prefix]:06d}"

    # -- for tests and the judges: the objects, unencoded ------------------------------------------------
    def intents(self, mode: str = "test") -> list[dict[str, Any]]:
        with self._lock:
            return [_public(i) for i in sorted(self.modes[mode].intents.values(), key=lambda i: i["id"])]

    def refunds(self, mode: str = "test") -> list[dict[str, Any]]:
        with self._lock:
            return [_public(r) for r in sorted(self.modes[mode].refunds.values(), key=lambda r: r["_seq"])]


# -- helpers: routes, params, objects ----------------------------------------------------------------------
ROUTES = [
    ("POST", re.compile(r"/v1/payment_intents"), "POST /v1/payment_intents"),
    ("GET", re.compile(r"/v1/payment_intents/search"), "GET /v1/payment_intents/search"),
    ("GET", re.compile(r"/v1/payment_intents"), "GET /v1/payment_intents"),
    ("GET", re.compile(r"/v1/payment_intents/([^/]+)"), "GET /v1/payment_intents/{id}"),
    ("POST", re.compile(r"/v1/customers"), "POST /v1/customers"),
    ("POST", re.compile(r"/v1/customers/([^/]+)"), "POST /v1/customers/{id}"),
    ("GET", re.compile(r"/v1/customers/([^/]+)"), "GET /v1/customers/{id}"),
    ("GET", re.compile(r"/v1/customers/([^/]+)/payment_methods"), "GET /v1/customers/{id}/payment_methods"),
    ("GET", re.compile(r"/v1/payment_methods"), "GET /v1/payment_methods"),
    ("GET", re.compile(r"/v1/payment_methods/([^/]+)"), "GET /v1/payment_methods/{id}"),
    ("POST", re.compile(r"/v1/payment_methods/([^/]+)/attach"), "POST /v1/payment_methods/{id}/attach"),
    ("POST", re.compile(r"/v1/refunds"), "POST /v1/refunds"),
    ("GET", re.compile(r"/v1/refunds"), "GET /v1/refunds"),
    ("GET", re.compile(r"/v1/refunds/([^/]+)"), "GET /v1/refunds/{id}"),
]


def _route(method: str, path: str) -> tuple[str, list[str]]:
    for m, pattern, route in ROUTES:
        match = pattern.fullmatch(path)
        if m == method and match:
            return route, list(match.groups())
    raise StripeError(404, "invalid_request_error",
                      f"Unrecognized request URL ({method}: {path}). This loopback Stripe serves "
                      "PaymentIntents, Customers, PaymentMethods and Refunds only.")


def _stand_in_request(mode: str, params: dict[str, Any], key: str) -> dict[str, Any]:
    """The stand-in's charge for a PaymentIntent request: who (metadata `account`, else the customer),
    how much, what for (metadata `reference`, else `order_id`), and the key (live keys apart)."""
    given = params.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    return {"customer": str(metadata.get("account") or params.get("customer") or ""),
            "amount": _as_int(params.get("amount"), "amount"), "currency": str(params.get("currency", "")).lower(),
            "reference": str(metadata.get("reference") or metadata.get("order_id") or ""),
            "idempotency_key": (key if mode == "test" else f"live:{key}") if key else None}


def _before(fault: Fault) -> Answer:
    if fault.status == 0:
        return Answer(0, {}, drop=True)
    headers = {"Stripe-Should-Retry": "true"} if fault.code == "lock_timeout" else {}
    return StripeError(fault.status, fault.type, fault.message, code=fault.code, headers=headers).as_answer()


def _replay(answer: Answer) -> Answer:
    # A replayed answer says so with the header `Idempotent-Replayed: true` (integrations read it to
    # tell a replay from a new payment: https://github.com/advisories/GHSA-8mhj-rffc-rcvw).
    return Answer(answer.status, answer.body, {**answer.headers, "Idempotent-Replayed": "true"}, answer.drop)


def _fingerprint(route: str, ids: list[str], params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([route, ids, params], sort_keys=True).encode()).hexdigest()


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


def _required(params: dict[str, Any], name: str) -> Any:
    if params.get(name) in (None, ""):
        raise StripeError(400, "invalid_request_error", f"Missing required param: {name}.",
                          code="parameter_missing", param=name)
    return params[name]


def _as_int(value: Any, param: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise StripeError(400, "invalid_request_error", "Invalid integer: " + str(value),
                          code="parameter_invalid_integer", param=param) from None


def _integer(params: dict[str, Any], name: str) -> int:
    return _as_int(_required(params, name), name)


def _boolean(params: dict[str, Any], name: str) -> bool:
    value = str(params.get(name, "false")).lower()
    if value not in ("true", "false"):
        raise StripeError(400, "invalid_request_error", f"Invalid boolean: {value}", param=name)
    return value == "true"


def _limit(params: dict[str, Any]) -> int:
    limit = _as_int(params.get("limit", DEFAULT_LIMIT), "limit")
    if not 1 <= limit <= MAX_LIMIT:
        raise StripeError(400, "invalid_request_error", "This value must be less than or equal to 100.",
                          param="limit")
    return limit


def _metadata(value: Any) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise StripeError(400, "invalid_request_error", "Invalid object", param="metadata")
    if len(value) > MAX_METADATA_KEYS:
        raise StripeError(400, "invalid_request_error", f"You can specify up to {MAX_METADATA_KEYS} keys.",
                          param="metadata")
    for name, text in value.items():
        if len(name) > MAX_METADATA_KEY or len(str(text)) > MAX_METADATA_VALUE:
            raise StripeError(400, "invalid_request_error",
                              f"Metadata keys can be up to {MAX_METADATA_KEY} characters and values up to "
                              f"{MAX_METADATA_VALUE}.", param=f"metadata[{name}]")
    return {str(k): str(v) for k, v in value.items()}


def _customer_fields(params: dict[str, Any]) -> dict[str, Any]:
    return {"email": params.get("email"), "name": params.get("name"), "description": params.get("description"),
            "metadata": _metadata(params.get("metadata"))}


def _behaviour(method: dict[str, Any] | None, fault: Fault | None, off_session: bool) -> str:
    """What confirming does: the scripted outcome, else the PaymentMethod's own behaviour. A card that
    needs authentication declines off-session with authentication_required ("the customer isn't in
    your checkout flow ... and can't authenticate": off_session, https://docs.stripe.com/api/payment_intents/create);
    on-session it waits in requires_action."""
    behaviour = fault.name if fault is not None and fault.stage == "outcome" else \
        (method or {}).get("_behaviour", "succeeds")
    if behaviour == "authentication_required" and not off_session:
        return "requires_action"
    if behaviour == "processing" or (method or {}).get("type") == "us_bank_account" and behaviour == "succeeds":
        return "processing"
    return behaviour


def _newest_first(item: dict[str, Any]) -> tuple[int, int]:
    """Lists and search results, newest first (https://docs.stripe.com/api/pagination)."""
    return (-item["created"], -item["_seq"])


def _page(url: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """A list page (https://docs.stripe.com/api/pagination): `starting_after` an id, `limit`."""
    limit = _limit(params)
    after = params.get("starting_after")
    if after:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1:] if after in ids else []
    return {"object": "list", "url": url, "has_more": len(items) > limit, "data": items[:limit]}


QUERY_CLAUSE = re.compile(r"""\s*(?:metadata\[(['"])(?P<key>[^'"]*)\1\]|(?P<field>[a-z_]+))
                              \s*(?P<op>:|>=|<=|>|<)\s*(?:(['"])(?P<text>[^'"]*)\5|(?P<number>-?\d+))\s*""", re.X)


def _parse_query(query: str) -> tuple[list[tuple[str, str, str]], str]:
    """Stripe's search query language (https://docs.stripe.com/search#search-query-language): clauses
    `field:value` (`metadata['key']:'value'`, `status:'succeeded'`, `created>=1700000000`), joined by
    AND or by OR ("you can't combine AND and OR in the same query"); at most 10 clauses."""
    parts = re.split(r"\s+(AND|OR)\s+", query.strip())
    joiners = set(parts[1::2])
    if not query.strip() or len(joiners) > 1:
        raise StripeError(400, "invalid_request_error", f"Invalid query: {query!r}", param="query")
    clauses = []
    for text in parts[0::2]:
        match = QUERY_CLAUSE.fullmatch(text)
        if not match:
            raise StripeError(400, "invalid_request_error", f"Invalid query clause: {text!r}", param="query")
        name = f"metadata.{match['key']}" if match["key"] is not None else match["field"]
        value = match["text"] if match["text"] is not None else match["number"]
        if name not in SEARCHABLE and not name.startswith("metadata."):
            raise StripeError(400, "invalid_request_error", f"Field {name!r} is not searchable on PaymentIntents.",
                              param="query")
        clauses.append((name, match["op"], value))
    if len(clauses) > 10:
        raise StripeError(400, "invalid_request_error", "A query has at most 10 clauses.", param="query")
    return clauses, (joiners.pop() if joiners else "AND")


#: PaymentIntent query fields (https://docs.stripe.com/search#query-fields-for-payment-intents).
SEARCHABLE = ("amount", "created", "currency", "customer", "status")


def _matches(intent: dict[str, Any], clause: tuple[str, str, str]) -> bool:
    name, op, value = clause
    actual = intent["metadata"].get(name[9:]) if name.startswith("metadata.") else intent.get(name)
    if actual is None:
        return False
    if op == ":":
        return str(actual) == value
    number = int(actual)
    return {">": number > int(value), "<": number < int(value), ">=": number >= int(value),
            "<=": number <= int(value)}[op]


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as served: without the loopback's own notes (keys starting `_`)."""
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in obj.items() if not k.startswith("_")}


def _customer(customer_id: str, now: float, mode: str, *, email: str | None, name: str | None,
              metadata: dict[str, str], description: str | None) -> dict[str, Any]:
    """A Customer with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": customer_id, "object": "customer", "address": None, "balance": 0, "created": int(now),
            "currency": None, "default_source": None, "delinquent": False, "description": description,
            "discount": None, "email": email, "invoice_prefix": customer_id[-8:].upper(),
            "invoice_settings": {"custom_fields": None, "default_payment_method": None, "footer": None,
                                 "rendering_options": None},
            "livemode": mode == "live", "metadata": dict(metadata), "name": name, "next_invoice_sequence": 1,
            "phone": None, "preferred_locales": [], "shipping": None, "tax_exempt": "none", "test_clock": None}


def _payment_method(method_id: str, now: float, mode: str, type: str, brand: str, last4: str) -> dict[str, Any]:
    """A PaymentMethod with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    method: dict[str, Any] = {
        "id": method_id, "object": "payment_method", "allow_redisplay": "unspecified",
        "billing_details": {"address": None, "email": None, "name": None, "phone": None, "tax_id": None},
        "created": int(now), "customer": None, "customer_account": None, "livemode": mode == "live",
        "metadata": {}, "type": type}
    if type == "card":
        method["card"] = {"brand": brand, "checks": None, "country": "US", "display_brand": brand,
                          "exp_month": 12, "exp_year": 2034, "fingerprint": f"fp{last4}{brand}"[:16],
                          "funding": "credit", "generated_from": None, "last4": last4,
                          "networks": {"available": [brand], "preferred": None},
                          "regulated_status": "unregulated", "three_d_secure_usage": {"supported": True},
                          "wallet": None}
    else:
        method[type] = {"last4": last4, "bank_name": "STRIPE TEST BANK"}
    return method


def _intent(intent_id: str, now: float, mode: str, *, amount: int, currency: str, customer: str | None,
            payment_method: str | None, metadata: dict[str, str], status: str,
            description: str | None) -> dict[str, Any]:
    """A PaymentIntent with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": intent_id, "object": "payment_intent", "amount": amount, "amount_capturable": 0,
            "amount_details": None, "amount_received": 0, "application": None, "application_fee_amount": None,
            "automatic_payment_methods": None, "canceled_at": None, "cancellation_reason": None,
            "capture_method": "automatic", "client_secret": f"{intent_id}_secret_loopback",
            "confirmation_method": "automatic", "created": int(now), "currency": currency, "customer": customer,
            "customer_account": None, "description": description, "excluded_payment_method_types": None,
            "last_payment_error": None, "latest_charge": None, "livemode": mode == "live",
            "managed_payments": None, "metadata": dict(metadata), "next_action": None, "on_behalf_of": None,
            "payment_method": payment_method, "payment_method_configuration_details": None,
            "payment_method_options": None, "payment_method_types": ["card"], "processing": None,
            "receipt_email": None, "review": None, "setup_future_usage": None, "shipping": None, "source": None,
            "statement_descriptor": None, "statement_descriptor_suffix": None, "status": status,
            "transfer_data": None, "transfer_group": None}


def _refund(refund_id: str, now: float, intent: dict[str, Any], amount: int, metadata: dict[str, str],
            reason: Any) -> dict[str, Any]:
    """A Refund with every field Stripe's fixture has (stripe/openapi fixtures3.json)."""
    return {"id": refund_id, "object": "refund", "amount": amount, "balance_transaction": None,
            "charge": intent["latest_charge"], "created": int(now), "currency": intent["currency"],
            "customer": intent["customer"], "customer_account": None,
            "destination_details": {"type": "card", "card": {"type": "refund"}}, "metadata": dict(metadata),
            "payment_intent": intent["id"], "payment_method": intent["payment_method"],
            "reason": reason, "receipt_number": None, "source_transfer_reversal": None, "status": "succeeded",
            "transfer_reversal": None}
