"""One Stripe account's API v1 rules for the loopback Stripe (idem.sim.stripe.server), without HTTP.

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
  with `created[gte]`...; refunds (listed by `payment_intent` and `created`).
- a rate limiter at Stripe's documented default, off unless set (`RateLimiter.documented()`).
"""
from __future__ import annotations

import threading
from typing import Any, Iterable

from ...core.provider import Provider
from .access import RESTRICTED, RateLimiter, key_mode
from .customers import CustomersAndPaymentMethods
from .errors import FAULTS, OUTCOMES, Answer, Fault, StripeError, _before, _missing
from .idempotency import IdempotentRequests, Saved
from .lists import _newest_first, _page, created_in, listed, search
from .objects import Objects, _public
from .params import _customer_fields, _required, _route
from .payment_intents import PaymentIntentsAndRefunds
from .shapes import unknown_parameters

__all__ = ["StripeAccount"]


class StripeAccount(IdempotentRequests, CustomersAndPaymentMethods, PaymentIntentsAndRefunds):
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
        self.expired_keys: set[str] = set()  # API keys rolled and expired (idem.sim.stripe.keys.expire_api_key)

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
                # The parameters known are stripe-python 16's typed ones (idem.sim.stripe.shapes).
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

    # -- writes ------------------------------------------------------------------------------------------
    def _execute(self, mode: str, route: str, ids: list[str], params: dict[str, Any], key: str,
                 fault: Fault | None) -> Answer:
        if route == "POST /v1/payment_intents":
            return self._create_intent(mode, params, key, fault)
        if route == "POST /v1/payment_intents/{id}/capture":
            return Answer(200, self._capture(mode, ids[0], params))
        if route == "POST /v1/customers":
            return Answer(200, self.create_customer(mode, **_customer_fields(params)))
        if route == "POST /v1/customers/{id}":
            return Answer(200, self._update_customer(mode, ids[0], params))
        if route == "POST /v1/payment_methods/{id}/attach":
            return Answer(200, self.attach(mode, ids[0], _required(params, "customer")))
        if route == "POST /v1/refunds":
            return Answer(200, self._refund(mode, params))
        raise StripeError(404, "invalid_request_error", f"Unrecognized request URL ({route}).")  # pragma: no cover

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
                return _page("/v1/payment_intents", [_public(i) for i in listed(objects, params)], params)
            if route == "GET /v1/payment_intents/search":
                return search(objects, params, self.now())
            if route == "GET /v1/refunds":
                # https://docs.stripe.com/api/refunds/list: by `payment_intent`, by `created`
                found = [r for r in objects.refunds.values()
                         if params.get("payment_intent") in (None, r["payment_intent"]) and created_in(r, params)]
                return _page("/v1/refunds", [_public(r) for r in sorted(found, key=_newest_first)], params)
            if route == "GET /v1/refunds/{id}":
                if ids[0] not in objects.refunds:
                    raise _missing("refund", ids[0], "id", self._other_mode_has(mode, "refunds", ids[0]))
                return _public(objects.refunds[ids[0]])
        raise StripeError(404, "invalid_request_error", f"Unrecognized request URL (GET: {route}).")

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
