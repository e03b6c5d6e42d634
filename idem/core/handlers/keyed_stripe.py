"""Stripe, through its own SDK (`stripe` 16.x), as the payment provider of the handler to copy (keyed.py):
a PaymentIntent created and confirmed in one call with the order's key as Stripe's Idempotency-Key;
past the key window, `find_charges` searches by the key in the metadata. Stripe's errors are not
translated (keyed_provider.meaning_of reads them). It imports nothing from keyed.py."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Mapping

import stripe
from stripe.params import PaymentIntentCreateParams

#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
MAX_KEY_CHARS = 255
#: Metadata: "values up to 500 characters long" (https://docs.stripe.com/api/metadata).
MAX_METADATA_CHARS = 500
#: No retry inside the SDK (https://github.com/stripe/stripe-python#configuring-automatic-retries):
#: Lambda's retry, with the same key, is the retry. A 1 s connect and 3 s read timeout keep one call
#: within keyed_settings.PROVIDER_CALL_SECONDS (the SDK's default read timeout is 80 s).
MAX_NETWORK_RETRIES = 0
TIMEOUT_SECONDS = (1.0, 3.0)  # (connect, read), per attempt
#: PaymentIntent statuses that mean money moved or will
#: (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status).
CHARGED = ("succeeded", "processing", "requires_capture")


@dataclass(frozen=True)
class StripeCharge:
    """A charge: its id, its key, the amount it took (a charge found is booked at it) and its status."""

    id: str
    idempotency_key: str
    amount: int
    status: str = "succeeded"  # keyed_provider.INTENT_MEANS says what it means


def stripe_key(key: str) -> str:
    """keyed's key as Stripe takes it: unchanged up to 255 characters, else its SHA-256."""
    return key if len(key) <= MAX_KEY_CHARS else "sha256-" + hashlib.sha256(key.encode("utf-8")).hexdigest()


class NoPaymentMethod(Exception):
    """No customer or no saved payment method to charge off-session: a person must add one."""

    http_status, type, code = 400, "invalid_request_error", "no_payment_method"


class StripeProvider:
    """keyed.py's PaymentProvider over a `stripe.StripeClient`: the linked customer charged off-session."""
    # Only in test mode is a customer that is not a cus_ id charged with pm_card_visa
    # (https://docs.stripe.com/testing). A restricted key needs PaymentIntents write and read, Customers read.

    def __init__(self, client: stripe.StripeClient, payment_method: str | None = "pm_card_visa",
                 live: bool = False) -> None:
        self.client, self.test_method, self.live = client, None if live else payment_method, live

    @classmethod
    def from_secret(cls, secret: str, api_base: str | None = None, payment_method: str = "pm_card_visa",
                    max_network_retries: int = MAX_NETWORK_RETRIES,
                    http_client: stripe.HTTPClient | None = None) -> StripeProvider:
        """A client for a secret key; `api_base` aims it elsewhere (the workbook's loopback Stripe)."""
        client = stripe.StripeClient(
            secret, max_network_retries=max_network_retries,
            http_client=http_client or stripe.RequestsClient(timeout=TIMEOUT_SECONDS),
            base_addresses={"api": api_base} if api_base else {})
        return cls(client, payment_method, live=secret.startswith(("sk_live_", "rk_live_")))

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, payment_method: str | None = None,
               metadata: Mapping[str, str] | None = None) -> StripeCharge:
        """Create and confirm a PaymentIntent; the same key replays the first answer for 24 h."""
        key = idempotency_key or ""
        cus = customer.startswith("cus_")
        method = payment_method or (self.saved_method(customer) if cus else self.test_method)
        if not method:
            raise NoPaymentMethod(f"no Stripe customer with a saved payment method for {customer[:60]!r}: name "
                                  "`customer` (cus_...) in the order, with a default payment method saved")
        params: PaymentIntentCreateParams = {
            "amount": amount, "currency": currency, "confirm": True, "off_session": True, "payment_method": method,
            # No redirect can happen in a Lambda: refuse such methods at once.
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            "metadata": self._metadata(customer, reference, key, metadata or {})}
        if cus:
            params["customer"] = customer
        intent = self.client.v1.payment_intents.create(
            params=params,
            options={"idempotency_key": stripe_key(key)} if key else {})
        return StripeCharge(str(intent.id), key, int(intent.amount), str(intent.status or "succeeded"))

    def find_charges(self, reference: str, idempotency_key: str) -> list[StripeCharge]:
        """The charges made with this order's key, however old (`reference` is not used)."""
        query = f"metadata['idempotency_key']:'{stripe_key(idempotency_key)}'"
        found = self.client.v1.payment_intents.search(params={"query": query, "limit": 10})
        return [StripeCharge(str(intent.id), idempotency_key, int(intent.amount), str(intent.status))
                for intent in found.auto_paging_iter()
                if intent.status in CHARGED
                and (intent.to_dict().get("metadata") or {}).get("idempotency_key") == stripe_key(idempotency_key)]

    def saved_method(self, customer: str) -> str | None:
        """The customer's default payment method (https://docs.stripe.com/api/customers/object), or None."""
        found = self.client.v1.customers.retrieve(customer)
        method = (found.to_dict().get("invoice_settings") or {}).get("default_payment_method")
        return method if isinstance(method, str) else (method or {}).get("id") if isinstance(method, dict) else None

    @staticmethod
    def _metadata(customer: str, reference: str, key: str, order: Mapping[str, str]) -> dict[str, Any]:
        # Names and ids only (https://docs.stripe.com/api/metadata); idem_stack: the reconciliation's filter.
        return {**{name: str(value)[:MAX_METADATA_CHARS] for name, value in order.items()},
                "account": customer[:MAX_METADATA_CHARS], "reference": reference[:MAX_METADATA_CHARS],
                "idempotency_key": stripe_key(key), "idem_stack": os.environ.get("STACK_NAME", "")[:MAX_METADATA_CHARS]}
