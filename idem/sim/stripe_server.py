"""A loopback Stripe: the part of Stripe's HTTP API the handler's adapter uses, on 127.0.0.1.

It speaks `POST /v1/payment_intents` (with `Idempotency-Key`) and
`GET /v1/payment_intents/search`, in Stripe's wire format (form-encoded requests, JSON
answers, `{"error": {...}}` bodies), so that the real `stripe` SDK, its HTTP client and its
retries run against it. Behind it is the provider stand-in (`idem.core.provider.Provider`):
one implementation of Stripe's v1 idempotency rules, which this server only carries over
HTTP (first answer saved, 500s included; 400 for a reused key with other parameters; keys
pruned after 24 h on the virtual clock; declines final). A request whose key is already in
flight gets 409, as Stripe answers (https://docs.stripe.com/api/errors).

Faults come from the local runtime as for the stand-in: `LoopbackStripe.charge(...,
outcome=)` sets the stand-in's outcome for the whole SDK call (every retry of it), so a
"provider down" stays down across the SDK's own retry, as it would for a second or two.
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
from urllib.parse import parse_qs, urlsplit

import stripe

from ..core.errors import (CardDeclined, IdempotencyKeyReused, KeyInFlight, ProviderError, ProviderFailed,
                           ProviderUnavailable)
from ..core.handlers.keyed_stripe import TIMEOUT_SECONDS, StripeProvider, stripe_key
from ..core.provider import Charge, Provider

__all__ = ["LoopbackStripe", "NoRealSleep", "StripeServer", "intent_id", "loopback_stripe"]

#: The error `type` Stripe gives each of the stand-in's refusals (https://docs.stripe.com/api/errors:
#: "One of api_error, card_error, idempotency_error, or invalid_request_error").
ERROR_TYPES: dict[type[ProviderError], str] = {
    CardDeclined: "card_error", IdempotencyKeyReused: "idempotency_error", KeyInFlight: "idempotency_error",
    ProviderFailed: "api_error", ProviderUnavailable: "api_error"}
#: "search" queries this server understands: the one the adapter sends.
QUERY = re.compile(r"metadata\['idempotency_key'\]:'([^']*)'")


class StripeServer:
    """Stripe's v1 API over the stand-in, served from a thread on 127.0.0.1 (a free port)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.outcome = "ok"  # what the stand-in does with the next requests (the runtime's faults)
        self.replayed: dict[str, bool] = {}  # per key: was its last answer a replay?
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self._lock, self._in_flight = threading.Lock(), set[str]()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

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

    # -- the two endpoints ----------------------------------------------------------------------
    def create(self, form: dict[str, str], key: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if key and key in self._in_flight:  # Stripe: 409 Conflict, nothing saved
                return _error(KeyInFlight("409: another request with this idempotency key is in flight"))
            self._in_flight.add(key)
        try:
            charge = self.provider.charge(
                customer=form.get("metadata[account]", ""), amount=int(form.get("amount", "0")),
                currency=form.get("currency", ""), reference=form.get("metadata[reference]", ""),
                idempotency_key=key or None, outcome=self.outcome)
        except ProviderError as refused:
            self.replayed[key] = refused.replayed
            return _error(refused)
        finally:
            with self._lock:
                self._in_flight.discard(key)
        self.replayed[key] = charge.replayed
        return 200, _intent(charge)

    def search(self, query: str) -> tuple[int, dict[str, Any]]:
        match = QUERY.fullmatch(query.strip())
        if not match:
            return 400, {"error": {"type": "invalid_request_error",
                                   "message": f"this loopback Stripe only searches by the idempotency key, not {query!r}"}}
        found = [_intent(c) for c in self.provider.charges() if c.idempotency_key == match.group(1)]
        return 200, {"object": "search_result", "url": "/v1/payment_intents/search", "has_more": False,
                     "next_page": None, "data": found}


def intent_id(charge_id: str) -> str:
    """The PaymentIntent id Stripe would give the stand-in's charge: `pi_` and the stand-in's
    number (`ch_000001` is `pi_000001`), so a run over Stripe books what Stripe returns
    (https://docs.stripe.com/api/payment_intents/object: ids start `pi_`), and each id still
    names one charge of the stand-in."""
    return "pi_" + charge_id.removeprefix("ch_")


def _intent(charge: Charge) -> dict[str, Any]:
    """A PaymentIntent as Stripe answers it (the fields the SDK and the adapter read)."""
    return {"id": intent_id(charge.id), "object": "payment_intent", "amount": charge.amount, "currency": charge.currency,
            "status": "succeeded", "livemode": False,
            "metadata": {"account": charge.customer, "reference": charge.reference,
                         "idempotency_key": charge.idempotency_key}}


def _error(refused: ProviderError) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"type": ERROR_TYPES.get(type(refused), "invalid_request_error"), "message": str(refused)}
    if isinstance(refused, CardDeclined):  # Stripe's decline body (https://docs.stripe.com/api/errors)
        body.update(code="card_declined", decline_code="generic_decline")
    return refused.http_status, {"error": body}


def _handler_for(server: StripeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
            path = urlsplit(self.path).path
            server.requests.append(("POST", path))
            if path != "/v1/payment_intents":
                return self._answer(404, {"error": {"type": "invalid_request_error", "message": "no such endpoint"}})
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            form = {name: values[-1] for name, values in parse_qs(body).items()}
            self._answer(*server.create(form, self.headers.get("Idempotency-Key", "")))

        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            server.requests.append(("GET", parts.path))
            if parts.path != "/v1/payment_intents/search":
                return self._answer(404, {"error": {"type": "invalid_request_error", "message": "no such endpoint"}})
            self._answer(*server.search(parse_qs(parts.query).get("query", [""])[-1]))

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Request-Id", f"req_loopback_{len(server.requests)}")
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
        return Charge(made.id, request["customer"], request["amount"], request["currency"], request["reference"],
                      key, replayed=self.server.replayed.get(stripe_key(key), False))

    def find_charges(self, reference: str, idempotency_key: str) -> list[Any]:
        return list(self.adapter.find_charges(reference, idempotency_key))

    def charges(self, *args: Any, **kwargs: Any) -> list[Charge]:
        return [dataclasses.replace(c, id=intent_id(c.id)) for c in self.server.provider.charges(*args, **kwargs)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server.provider, name)


@contextlib.contextmanager
def loopback_stripe(world: Any) -> Iterator[StripeServer]:
    """Serve Stripe on loopback for `world`, and make every provider the world hands out
    (`world.provider()`, and so the local runtime's) Stripe's SDK aimed at it."""
    server = StripeServer(world.provider()).start()
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
