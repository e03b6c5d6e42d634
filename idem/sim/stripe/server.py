"""A loopback Stripe: the part of Stripe's HTTP API v1 the handler, `idem settle`/`refund` and the
reconciliation use, on 127.0.0.1, in Stripe's wire format (form-encoded requests, JSON answers,
`{"error": {...}}` bodies), so that the real `stripe` SDK, its HTTP client and its retries run
against it. The rules are idem.sim.stripe.account.StripeAccount's (each cited there); behind them the
provider stand-in (`idem.core.provider.Provider`) keeps the money, so a run over the loopback and a
run over the stand-in count the same charges.

Served: POST/GET /v1/customers[/{id}], GET /v1/customers/{id}/payment_methods,
GET /v1/payment_methods/{id}, POST /v1/payment_methods/{id}/attach, POST /v1/payment_intents,
GET /v1/payment_intents[/{id}], GET /v1/payment_intents/search, POST/GET /v1/refunds[/{id}].
The API key (`Authorization: Bearer sk_test_...`) picks the mode: test and live objects are apart.

For tests:
- `seed_customer(server, payment_method="pm_card_visa")` -> (customer id, payment method id): a
  customer with a saved method, set as its default (`invoice_settings.default_payment_method`);
  `mode="live"` and `payment_method="card"` for a live customer's saved card.
- `server.inject("rate_limit", "lock_timeout", ...)`: the next requests' answers (FAULTS in
  stripe.errors: rate_limit (429), rate_limit_400, lock_timeout, api_error (500 after execution:
  saved), unavailable (503 before: not saved), in_flight (409), invalid_request, drop_before,
  drop_after (lost connections), card_declined, insufficient_funds, expired_card,
  authentication_required (402 card_error), requires_action, processing); `path=`/`method=` aim them.
- `server.settle(pi_id, succeeded=True|False)`: a processing PaymentIntent's result.
- `server.search_lag_seconds = 60`: new PaymentIntents stay out of search that long.
- `server.rate_limiter = RateLimiter.documented()`: Stripe's default limits (off unless set).
- `server.restrict("rk_test_...", {"payment_intents:write"})`: a restricted key's permissions.
- `server.outcome`: the local runtime's provider fault ("provider_500", ...) or any FAULTS name, for
  every PaymentIntent request until reset: `LoopbackStripe.charge(..., outcome=)` sets it for one
  SDK call (every retry of it).
No test reaches Stripe itself: the client is aimed here with `base_addresses`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlsplit

import stripe

from ...core.handlers.keyed_stripe import TIMEOUT_SECONDS, StripeProvider, stripe_key
from ...core.provider import Charge, Provider
from .access import RateLimiter, key_mode
from .account import StripeAccount
from .errors import FAULTS, OUTCOMES, Answer, StripeError

__all__ = ["FAULTS", "LoopbackStripe", "NoRealSleep", "RateLimiter", "StripeAccount", "StripeError",
           "StripeServer", "decode_form", "intent_id", "key_mode", "loopback_stripe", "seed_customer"]


class StripeServer:
    """Stripe's v1 API (idem.sim.stripe.account.StripeAccount) served from a thread on 127.0.0.1 (a
    free port). The account's settings and hooks are reachable here too: `outcome`, `inject`,
    `search_lag_seconds`, `rate_limiter`, `settle`, `restrict`, `replayed`."""

    def __init__(self, provider: Provider) -> None:
        self.account = StripeAccount(provider)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        #: (method, path, parameters, status, body) of every exchange, for the shape tests; off: None
        self.exchanges: list[tuple[str, str, dict[str, Any], int, dict[str, Any]]] | None = None
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def provider(self) -> Provider:
        return self.account.provider

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StripeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def __getattr__(self, name: str) -> Any:  # the account's settings and hooks
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.account, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "outcome" and value != "ok" and value not in OUTCOMES and value not in FAULTS:
            raise ValueError(f"no outcome {value!r}: one of {', '.join(sorted({*OUTCOMES, *FAULTS}))}")
        if name in ("outcome", "search_lag_seconds", "rate_limiter"):
            setattr(self.account, name, value)
        else:
            super().__setattr__(name, value)

    def answer(self, method: str, target: str, body: str, headers: Any) -> Answer:
        parts = urlsplit(target)
        self.requests.append((method, parts.path))
        params = decode_form(body if method == "POST" else parts.query)
        auth = headers.get("Authorization") or ""
        api_key = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        answer = self.account.handle(method, parts.path, params, api_key, headers.get("Idempotency-Key") or "")
        if self.exchanges is not None:
            self.exchanges.append((method, parts.path, params, answer.status, answer.body))
        return answer


def seed_customer(server: StripeServer | StripeAccount, *, mode: str = "test", payment_method: str = "pm_card_visa",
                  default: bool = True, email: str | None = None, metadata: dict[str, str] | None = None,
                  behaviour: str | None = None, customer_id: str | None = None) -> tuple[str, str]:
    """A customer with a saved PaymentMethod, for tests: returns (customer id, payment method id).
    `payment_method`: a test PaymentMethod to attach (test mode: `pm_card_visa`, `pm_card_chargeDeclined`,
    `pm_card_authenticationRequired`, ...), or "card"/"us_bank_account" for a method saved on-session,
    as in live mode, with `behaviour` ("succeeds", "card_declined/insufficient_funds",
    "authentication_required", "processing"). `default`: also set as
    `invoice_settings.default_payment_method`. `customer_id`: the customer's id, chosen (for an
    order file that names it: `cus_` and letters, digits or underscores), else a new one."""
    account = server.account if isinstance(server, StripeServer) else server
    customer = account.create_customer(mode, email=email, metadata=metadata, customer_id=customer_id)
    if payment_method in ("card", "us_bank_account"):
        made = account.create_payment_method(
            mode, type=payment_method, behaviour=behaviour or ("processing" if payment_method != "card" else "succeeds"),
            last4="6789" if payment_method != "card" else "4242")
        method = account.attach(mode, made["id"], customer["id"])
    else:
        method = account.attach(mode, payment_method, customer["id"])
        if behaviour:
            account.modes[mode].payment_methods[method["id"]]["_behaviour"] = behaviour
    if default:
        account.modes[mode].customers[customer["id"]]["invoice_settings"]["default_payment_method"] = method["id"]
    return customer["id"], method["id"]


def decode_form(text: str) -> dict[str, Any]:
    """Stripe's form encoding, as stripe-python sends it (`metadata[k]=v`, `expand[0]=x`, `a[b][c]=v`),
    into nested dicts and lists."""
    root: dict[str, Any] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        path = re.findall(r"[^\[\]]+", name)
        node = root
        for part in path[:-1]:
            node = node.setdefault(part, {})
        if path:
            node[path[-1]] = value
    decoded: dict[str, Any] = _lists(root)
    return decoded


def _lists(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _lists(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
    return node


def intent_id(charge_id: str) -> str:
    """The PaymentIntent id Stripe would give the stand-in's charge: `pi_` and the stand-in's
    number (`ch_000001` is `pi_000001`), so a run over Stripe books what Stripe returns
    (https://docs.stripe.com/api/payment_intents/object: ids start `pi_`), and each id still
    names one charge of the stand-in."""
    return "pi_" + charge_id.removeprefix("ch_")


def _handler_for(server: StripeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            self._send(server.answer("POST", self.path, body, self.headers))

        def do_GET(self) -> None:  # noqa: N802
            self._send(server.answer("GET", self.path, "", self.headers))

        def do_DELETE(self) -> None:  # noqa: N802
            self._send(server.answer("DELETE", self.path, "", self.headers))

        def _send(self, answer: Answer) -> None:
            if answer.drop:  # the connection closes with no answer: the client sees a lost connection
                self.close_connection = True
                return
            data = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Request-Id", f"req_loopback_{len(server.requests)}")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
            pass

    return Handler


class NoRealSleep(stripe.RequestsClient):
    """The adapter's HTTP client, whose retries do not wait on the real clock: nothing on
    the loopback needs time to recover, and the runtime's clock is virtual (nothing sleeps)."""

    def _sleep_time_seconds(self, num_retries: int, response: Any = None) -> float:
        return 0.0


class LoopbackStripe:
    """The handler's provider in the local runtime: the adapter (keyed_stripe.StripeProvider,
    Stripe's SDK) aimed at the loopback server. `outcome=` is the runtime's fault for this
    call; `charges()` and the rest are the stand-in's, the ground truth of what was charged,
    with the ids Stripe gives (`pi_`, as the handler books them)."""

    def __init__(self, server: StripeServer, adapter: StripeProvider | None = None) -> None:
        self.server = server
        self.adapter = adapter or StripeProvider.from_secret("sk_test_loopback", api_base=server.url,
                                                             http_client=NoRealSleep(timeout=TIMEOUT_SECONDS))

    def charge(self, *, outcome: str | None = None, **request: Any) -> Charge:
        if outcome is None:  # no fault for this call: whatever the server was told stands
            made = self.adapter.charge(**request)
        else:
            self.server.outcome = outcome
            try:
                made = self.adapter.charge(**request)
            finally:
                self.server.outcome = "ok"
        key = request.get("idempotency_key") or ""
        return Charge(str(made.id), str(request.get("customer", "")), int(request.get("amount", 0)),
                      str(request.get("currency", "")), str(request.get("reference", "")), key,
                      replayed=self.server.account.replayed.get(stripe_key(key), False), status=str(made.status))

    def find_charges(self, reference: str, idempotency_key: str) -> list[Any]:
        return list(self.adapter.find_charges(reference, idempotency_key))

    def saved_method(self, customer: str) -> str | None:
        """The customer's saved default payment method, read as the adapter reads it (keyed.py reads
        it once per order and keeps it in the record)."""
        return self.adapter.saved_method(customer)

    def charges(self, *args: Any, **kwargs: Any) -> list[Charge]:
        return [dataclasses.replace(c, id=intent_id(c.id)) for c in self.server.provider.charges(*args, **kwargs)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server.provider, name)


@contextlib.contextmanager
def loopback_stripe(world: Any, *, rate_limiter: RateLimiter | None = None,
                    search_lag_seconds: float = 0.0) -> Iterator[StripeServer]:
    """Serve Stripe on loopback for `world`, and make every provider the world hands out
    (`world.provider()`, and so the local runtime's) Stripe's SDK aimed at it. `rate_limiter`:
    e.g. `RateLimiter.documented()` (off by default); `search_lag_seconds`: how long a new
    PaymentIntent stays out of search (0 by default)."""
    server = StripeServer(world.provider()).start()
    server.rate_limiter, server.search_lag_seconds = rate_limiter, search_lag_seconds
    saved = world.wrap_provider

    def wrap(stand_in: Provider) -> LoopbackStripe:
        server.provider.clock = stand_in.clock  # a world may start a fresh clock per schedule
        return LoopbackStripe(server)

    world.wrap_provider = wrap
    try:
        yield server
    finally:
        world.wrap_provider = saved
        server.stop()
