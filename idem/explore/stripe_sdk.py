"""Stripe's SDK used directly by a handler, aimed at the loopback Stripe during a check.

Most teams call Stripe without a factory the check could replace: `stripe.api_key = ...` at
module level and `stripe.PaymentIntent.create(...)`, or `stripe.StripeClient(key)` and
`client.v1.payment_intents.create(...)`. Both go to `stripe.api_base` / the client's
`base_addresses["api"]`, https://api.stripe.com by default
(https://github.com/stripe/stripe-python#configuring-a-client). During a check with the Stripe
provider, every loopback Stripe the check starts (`idem.sim.stripe_server.StripeServer`) becomes
where both point, so the handler's own calls land where the check counts charges; its HTTP
client's retries do not sleep on the real clock (`NoRealSleep`). `idem check` turns this on
with `--provider stripe`, or by itself when the handler's module imports stripe (`uses_stripe`).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

_aimed: list[str] = []  # the loopback Stripe now serving, in this process


def uses_stripe(target: str) -> bool:
    """Whether the handler's own module imports Stripe's SDK (read from its source)."""
    module = target.rpartition(":")[0]
    path: str | None = module if module.endswith(".py") else None
    if path is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False
        path = spec.origin if spec else None
    try:
        tree = ast.parse(Path(path or "").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "stripe" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "stripe":
            return True
    return False


def aim_sdk_at_loopback() -> None:
    """From now on in this process, each loopback Stripe started becomes where Stripe's SDK
    sends requests: module-level calls and every StripeClient made without an address of its own."""
    import stripe

    from ..core.handlers.keyed_stripe import TIMEOUT_SECONDS
    from ..sim import stripe_server

    server_class: Any = stripe_server.StripeServer
    if getattr(server_class.start, "_aims_sdk", False):
        return
    real_start = server_class.start

    def start(self: Any) -> Any:
        started = real_start(self)
        _aimed[:] = [self.url]
        stripe.api_base = self.url
        stripe.default_http_client = stripe_server.NoRealSleep(timeout=TIMEOUT_SECONDS)
        return started

    start._aims_sdk = True  # type: ignore[attr-defined]
    server_class.start = start

    real_init = stripe.StripeClient.__init__

    def init(self: Any, *args: Any, base_addresses: Any = None, http_client: Any = None, **kwargs: Any) -> None:
        addresses = dict(base_addresses or {})
        if _aimed:
            addresses["api"] = _aimed[-1]
            http_client = http_client or stripe_server.NoRealSleep(timeout=TIMEOUT_SECONDS)
        real_init(self, *args, base_addresses=addresses, http_client=http_client, **kwargs)

    stripe.StripeClient.__init__ = init  # type: ignore[method-assign]
