"""Who charges, for the handler to copy (keyed.py): what it needs of a payment provider, and
the provider's client built at cold start (Stripe's, through keyed_stripe.py). The workbook's
runtime and `idem check` replace `make_provider` (as keyed.make_provider) with their own.
Copy it beside keyed.py; it imports only the standard library and boto3 (and, when it builds
Stripe's client, keyed_stripe.py and the `stripe` package).
"""
from __future__ import annotations

import os
from typing import Any, Protocol

import boto3  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_settings import ConfigError
else:
    from .keyed_settings import ConfigError  # type: ignore[import-not-found, no-redef, unused-ignore]


# -- who charges: the payment provider's client, built at cold start ------------------------------
class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (Stripe-shaped; keyed_stripe.py adapts
    Stripe's SDK to it). Errors carry `http_status` as Stripe's do; a lost connection has none."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None) -> Any:
        """Move `amount` (in the currency's smallest unit); the same key replays the first charge.
        Returns an object with the charge's `id`."""


def make_provider() -> PaymentProvider:
    """The payment provider's client, built once per container. With STRIPE_SECRET_PARAMETER
    set, Stripe's (keyed_stripe.py, copied beside this file), with the secret key read from
    SSM Parameter Store; without it the function refuses to start. The workbook's local
    runtime and `idem check` replace this function with their provider (the stand-in that
    keeps Stripe's rules, or Stripe's SDK aimed at a loopback server)."""
    parameter = os.environ.get("STRIPE_SECRET_PARAMETER", "")
    if not parameter:
        raise ConfigError("STRIPE_SECRET_PARAMETER is not set: name the SSM SecureString that holds "
                          "your Stripe secret key, or replace make_provider() with your provider's client")
    secret = boto3.client("ssm").get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    # Imported here: only a function that charges through Stripe needs it (and the `stripe` package).
    if COPIED:
        from keyed_stripe import StripeProvider
    else:
        from .keyed_stripe import StripeProvider  # type: ignore[import-not-found, no-redef, unused-ignore]

    # STRIPE_API_BASE aims the client at another Stripe (the workbook's loopback one); unset: Stripe's.
    provider: PaymentProvider = StripeProvider.from_secret(secret, os.environ.get("STRIPE_API_BASE") or None)
    return provider
