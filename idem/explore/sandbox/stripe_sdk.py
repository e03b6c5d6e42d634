"""Stripe's SDK used directly by a handler, aimed at the loopback Stripe during a check.

Most teams call Stripe without a factory the check could replace: `stripe.api_key = ...` at
module level and `stripe.PaymentIntent.create(...)`, or `stripe.StripeClient(key)` and
`client.v1.payment_intents.create(...)`. Both go to `stripe.api_base` / the client's
`base_addresses["api"]`, https://api.stripe.com by default
(https://github.com/stripe/stripe-python#configuring-a-client). During a check with the Stripe
provider, every loopback Stripe the check starts (`idem.sim.stripe.server.StripeServer`) becomes
where both point, so the handler's own calls land where the check counts charges; its HTTP
client's retries do not sleep on the real clock (`NoRealSleep`). `idem check` turns this on
with `--provider stripe`, or by itself when the handler's module imports stripe (`uses_stripe`).
"""
from __future__ import annotations

import ast
import functools
from typing import Any
from urllib.parse import urlsplit

_aimed: list[str] = []  # the loopback Stripe now serving, in this process
_serving: list[Any] = []  # and the server itself (a StripeServer)

#: The request that creates a charge: POST /v1/payment_intents (with confirm=true, a charge)
#: (https://docs.stripe.com/api/payment_intents/create). The loopback Stripe serves no other request that
#: charges (a capture collects a hold already placed: it goes as it is, as reads do).
CHARGE_PATH = "/v1/payment_intents"


def uses_stripe(target: str) -> bool:
    """Whether the handler's own module imports Stripe's SDK (read from its source)."""
    from ..target.handler_shape import source_tree

    tree = source_tree(target.rpartition(":")[0])
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "stripe" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "stripe":
            return True
    return False


def provider_for(target: str, provider: str) -> str:
    """What the check gives `target` to pay with: `provider` as asked, except that a handler whose
    module imports Stripe's SDK gets it aimed at the loopback Stripe ("stripe") rather than the
    stand-in, since its own Stripe calls would otherwise leave the machine."""
    return "stripe" if provider == "stand-in" and uses_stripe(target) else provider


def aim_sdk_at_loopback() -> None:
    """From now on in this process, each loopback Stripe becomes, while it serves, where Stripe's
    SDK sends requests: module-level calls and every StripeClient made without an address of its
    own. When it stops, the SDK is aimed back where it was."""
    import stripe

    from ...core.handlers.keyed_stripe import TIMEOUT_SECONDS
    from ...sim.stripe import server as stripe_server

    server_class: Any = stripe_server.StripeServer
    if getattr(server_class.start, "_aims_sdk", False):
        return
    real_start = server_class.start

    real_stop = server_class.stop
    before: dict[int, tuple[Any, Any]] = {}  # each server's SDK settings as they were when it started

    def start(self: Any) -> Any:
        started = real_start(self)
        before[id(self)] = (stripe.api_base, stripe.default_http_client)
        _aimed[:], _serving[:] = [self.url], [self]
        stripe.api_base = self.url
        stripe.default_http_client = sdk_client_class()(timeout=TIMEOUT_SECONDS)
        return started

    def stop(self: Any) -> None:
        """Stop serving, and aim the SDK back where it was (a test process goes on using it)."""
        try:
            real_stop(self)
        finally:
            if id(self) in before:
                stripe.api_base, stripe.default_http_client = before.pop(id(self))
            if _serving and _serving[-1] is self:
                _aimed.clear()
                _serving.clear()

    start._aims_sdk = True  # type: ignore[attr-defined]
    server_class.start, server_class.stop = start, stop

    real_init = stripe.StripeClient.__init__

    def init(self: Any, *args: Any, base_addresses: Any = None, http_client: Any = None, **kwargs: Any) -> None:
        addresses = dict(base_addresses or {})
        if _aimed:
            addresses["api"] = _aimed[-1]
            http_client = http_client or sdk_client_class()(timeout=TIMEOUT_SECONDS)
        real_init(self, *args, base_addresses=addresses, http_client=http_client, **kwargs)

    stripe.StripeClient.__init__ = init  # type: ignore[method-assign]


def read_call(path: str) -> str:
    """The boundary a read of Stripe's crosses, named as Stripe's API reference names the call:
    GET /v1/payment_intents is `stripe:ListPaymentIntents`, /v1/payment_intents/search
    `stripe:SearchPaymentIntents`, /v1/customers/cus_1 `stripe:RetrieveCustomer`, and
    /v1/customers/cus_1/payment_methods `stripe:ListCustomerPaymentMethods`."""
    from ...sim.faults import STRIPE_READS

    parts = [part for part in path.split("/") if part][1:]  # the path after /v1

    def words(name: str, one: bool = False) -> str:
        return "".join(word.capitalize() for word in (name[:-1] if one and name.endswith("s") else name).split("_"))

    if len(parts) <= 1:
        return f"{STRIPE_READS}List{words(parts[0] if parts else 'objects')}"
    if parts[1] == "search":
        return f"{STRIPE_READS}Search{words(parts[0])}"
    if len(parts) == 2:
        return f"{STRIPE_READS}Retrieve{words(parts[0], one=True)}"
    return f"{STRIPE_READS}List{words(parts[0], one=True)}{words(parts[-1])}"


def read_at_boundary(running: Any, url: str, send: Any) -> Any:
    """A read the handler sends to Stripe during an invocation (any GET): the boundary before it
    (`read_call`). Where the fault plan fails it, the handler gets what Stripe's SDK raises when it
    cannot reach Stripe, or Stripe answers 500, on every attempt its `max_network_retries` allows:
    an APIConnectionError ("Connection errors", "Server errors": https://docs.stripe.com/error-handling).
    A read changes nothing at Stripe, so there is no boundary after it. Else the read goes as it is."""
    import stripe

    from ...sim.faults import InjectedFault

    watch, visit = running
    try:
        watch.before_read(visit, read_call(urlsplit(url).path))
    except InjectedFault as fault:
        raise stripe.APIConnectionError(f"Unexpected error communicating with Stripe: GET {urlsplit(url).path} "
                                        f"failed on every attempt of the SDK's ({fault})") from None
    return send()


def _error_words(body: Any) -> str:
    """A Stripe error's code and message, from the body of its answer (https://docs.stripe.com/api/errors)."""
    import json

    try:
        error = json.loads(body.decode("utf-8") if isinstance(body, bytes) else str(body)).get("error") or {}
    except (ValueError, AttributeError):
        return "400"
    return f"400 {error.get('code') or error.get('type') or ''}: {error.get('message') or ''}"[:300]


def _form(post_data: Any) -> str:
    """The body of a request of Stripe's SDK, as text (it sends it form-encoded)."""
    return post_data.decode("utf-8", "replace") if isinstance(post_data, bytes) else str(post_data or "")


def _texts(node: Any) -> list[str]:
    """Every value in a decoded form (the order's reference in `metadata` among them)."""
    if isinstance(node, dict):
        return [text for value in node.values() for text in _texts(value)]
    if isinstance(node, list):
        return [text for value in node for text in _texts(value)]
    return [str(node)]


def _executed(server: Any) -> int:
    """How many charges the loopback Stripe's provider has executed so far (a saved 500's too)."""
    return len(server.provider.store.charge_items())


@functools.cache
def sdk_client_class() -> type:
    """`WatchedSdkClient`, made on first use: Stripe's SDK is imported only by a check that needs it."""
    from ...sim.stripe import server as stripe_server
    from ...sim.boundary import Crossing, current
    from ...sim.faults import CHARGE_CALL
    from ...sim.sdk_retries import is_lost_answer, lose_stripe_answer

    class WatchedSdkClient(stripe_server.NoRealSleep):
        """The HTTP client of Stripe's SDK when the handler calls it directly during a check. A
        request that creates a charge is the same boundary `provider:charge` a provider client
        built with the factory crosses (`boundary.WatchedProvider.charge`): the fault plan can
        fail the invocation before or after it, or have the provider answer it badly (503, a
        saved 500, 409, a decline) for the whole SDK call, retries included; a request with a key
        in flight gets 409. The charges it executed are put on the invocation that sent it, so
        two uploads of one name are each judged on their own charges. A read (any GET) crosses a
        boundary of its own, where the fault plan can fail it (`read_at_boundary`). Other requests, and a
        request made outside any invocation, go as they are."""

        def request(self, method: str, url: str, headers: Any, post_data: Any = None) -> Any:
            """One attempt of the SDK's: a lost answer (the fault plan's, after the charge call) is
            the APIConnectionError the SDK retries, its own `max_network_retries` times
            (`sdk_retries.lose_stripe_answer`); then the handler sees it."""
            answer = super(WatchedSdkClient, self).request(method, url, headers, post_data)
            lose_stripe_answer(answer, current, Crossing)
            return answer

        def request_with_retries(self, method: str, url: str, headers: Any, post_data: Any = None,
                                 max_network_retries: Any = None, *, _usage: Any = None) -> Any:
            def send() -> Any:
                return super(WatchedSdkClient, self).request_with_retries(
                    method, url, headers, post_data, max_network_retries, _usage=_usage)

            running, server = current(), (_serving[-1] if _serving else None)
            if running is not None and server is not None and method.upper() == "GET":
                return read_at_boundary(running, url, send)  # a read: it can fail, as Stripe's can
            if running is None or server is None or running[0].provider is None \
                    or method.upper() != "POST" or urlsplit(url).path != CHARGE_PATH:
                return send()
            watch, visit = running
            provider = watch.provider
            outcome = provider.before_charge(watch, visit, dict(headers or {}).get("Idempotency-Key"))
            before = _executed(server)
            if outcome:
                server.outcome = outcome
            visit.sdk_attempts = 0  # type: ignore[attr-defined]  # this SDK call's attempts (sdk_retries)
            try:
                answer = send()
            except BaseException as error:
                provider.count(_executed(server) - before, visit.work)
                if is_lost_answer(error):  # every attempt's answer lost: the call did its work
                    watch.after(visit, CHARGE_CALL)
                else:
                    watch.abandon(visit)
                raise
            finally:
                visit.sdk_attempts = None  # type: ignore[attr-defined]
                if outcome:
                    server.outcome = "ok"
            made = _executed(server) - before
            provider.count(made, visit.work)
            if answer[1] >= 400:  # the SDK raises Stripe's error: no answer reaches the handler
                watch.abandon(visit)
                if answer[1] == 400:  # refused as invalid: nothing executed, nothing saved for the key
                    watch.refused.append(_error_words(answer[0]))
                if answer[1] == 402 and watch.declines is not None:  # a decline: final, for this order only
                    watch.declines.append("\n".join(_texts(stripe_server.decode_form(_form(post_data)))))
            else:
                # Stripe marks a replayed answer with `Idempotent-Replayed: true`
                # (https://docs.stripe.com/api/idempotent_requests)
                replayed = any(name.lower() == "idempotent-replayed" and str(value).lower() == "true"
                               for name, value in dict(answer[2] or {}).items())
                watch.after(visit, CHARGE_CALL, step="replayed" if replayed else None)
            return answer

    return WatchedSdkClient
