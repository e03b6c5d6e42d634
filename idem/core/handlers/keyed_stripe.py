"""Stripe, through its own SDK, as the payment provider of the handler to copy (keyed.py).

Copy this file beside keyed.py and add `stripe` (16.x) to the function's requirements.
keyed.py's `make_provider()` imports it by its plain name when STRIPE_SECRET_PARAMETER is
set; this file imports nothing from keyed.py, so the two run from any folder.

What it does, with Stripe's API v1 rules (facts cited where they are used):
- `charge` creates and confirms a PaymentIntent in one call, with keyed's idempotency key as
  Stripe's `Idempotency-Key` (hashed when longer than Stripe's 255 characters), and metadata
  that name the order (docs/one_charge_per_order.md): its order_id, bucket and key, the account,
  the object's reference, the idempotency key itself and the stack (idem_stack), never the
  version id: every upload of one order sends the same parameters with its key.
- Stripe's errors are not translated: they carry `http_status`, which keyed.py reads
  (402 declined; 400/404 and 500 saved for the key: needs attention; 409, 429, 5xx others
  and lost connections: released, retried by Lambda).
- `find_charges` searches PaymentIntents by that metadata, for keyed's look-up past the key
  window. Stripe's search is eventually consistent: "Under normal operating conditions,
  data is searchable in less than a minute. Occasionally, propagation of new or updated data
  can be up to an hour behind during outages" (https://docs.stripe.com/api/payment_intents/search).
  A redrive comes a day or more after its charge, long after it became searchable, so the
  search finds it; during a long Stripe outage a charge made in the last hour could be
  missed and, its key pruned, made again. The key, not the search, guards the first 24 h.
"""
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
#: The SDK's own retries of one request: none. stripe-python retries connection errors, 409 and
#: 5xx after 0.5 s, 1 s, ... with the same Idempotency-Key
#: (https://github.com/stripe/stripe-python#configuring-automatic-retries); here Lambda's own
#: retry, a minute later and with the same key, is the retry. A 1 s connect and 3 s read timeout
#: keep one call within keyed_settings.PROVIDER_CALL_SECONDS (4 s), so that the slowest path of
#: an upload fits in the function's 60 s (keyed_settings.slowest_path_seconds). The SDK's
#: default read timeout is 80 s, longer than the function's.
MAX_NETWORK_RETRIES = 0
TIMEOUT_SECONDS = (1.0, 3.0)  # (connect, read), per attempt
#: PaymentIntent statuses that mean money moved or will
#: (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status).
CHARGED = ("succeeded", "processing", "requires_capture")


@dataclass(frozen=True)
class StripeCharge:
    """What keyed.py needs of a charge: its id, the key it was made with, and the amount it
    took (in the currency's smallest unit): a charge found past the key window is booked at it."""

    id: str
    idempotency_key: str
    amount: int
    status: str = "succeeded"  # the PaymentIntent's status: keyed_provider.INTENT_MEANS says what it means


def stripe_key(key: str) -> str:
    """keyed's key as Stripe takes it: unchanged up to 255 characters, else its SHA-256."""
    return key if len(key) <= MAX_KEY_CHARS else "sha256-" + hashlib.sha256(key.encode("utf-8")).hexdigest()


class NoPaymentMethod(Exception):
    """No customer or no saved payment method to charge off-session: a person must add one.
    Read as Stripe's invalid_request_error (keyed_provider.meaning_of): needs attention."""

    http_status, type, code = 400, "invalid_request_error", "no_payment_method"


class StripeProvider:
    """keyed.py's PaymentProvider over a `stripe.StripeClient`.

    Who pays: the customer keyed.py passes, the account's linked one (`idem customers link`: a
    Stripe customer id, cus_..., never the file's choice), charged off-session (off_session=True,
    confirm=True) with the order's `payment_method` or the customer's saved default
    (`invoice_settings.default_payment_method`, https://docs.stripe.com/api/customers/object),
    which keyed.py reads once per order (`saved_method`) and keeps in the order's record. Only in
    test mode, a customer that is not a cus_ id is charged with the test PaymentMethod
    pm_card_visa (https://docs.stripe.com/testing), which live mode does not have.
    The restricted key needs PaymentIntents: write (create), and read (the search past the key
    window), and Customers: read (the default payment method); nothing more
    (https://docs.stripe.com/keys#create-restricted-api-secret-key)."""

    def __init__(self, client: stripe.StripeClient, payment_method: str | None = "pm_card_visa",
                 live: bool = False) -> None:
        self.client, self.test_method, self.live = client, None if live else payment_method, live

    @classmethod
    def from_secret(cls, secret: str, api_base: str | None = None, payment_method: str = "pm_card_visa",
                    max_network_retries: int = MAX_NETWORK_RETRIES,
                    http_client: stripe.HTTPClient | None = None) -> StripeProvider:
        """A client for a secret key (read by keyed.make_provider from SSM). `api_base`
        aims it elsewhere than api.stripe.com (the workbook's loopback Stripe, which also
        passes an `http_client` that skips the real sleep between the SDK's retries)."""
        client = stripe.StripeClient(
            secret, max_network_retries=max_network_retries,
            # requests retries dropped connections; the urllib client does not (stripe-python's
            # _http_client.py). Its default read timeout is 80 s, longer than the function's.
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
        """The charges made with this order's key, however old and whatever object name carried
        the order (Stripe's search, above, by the key in the metadata; `reference` is not used)."""
        query = f"metadata['idempotency_key']:'{stripe_key(idempotency_key)}'"
        found = self.client.v1.payment_intents.search(params={"query": query, "limit": 10})
        return [StripeCharge(str(intent.id), idempotency_key, int(intent.amount), str(intent.status))
                for intent in found.auto_paging_iter()
                if intent.status in CHARGED
                and (intent.to_dict().get("metadata") or {}).get("idempotency_key") == stripe_key(idempotency_key)]

    def saved_method(self, customer: str) -> str | None:
        """The customer's default payment method, saved for off-session use, or None. keyed.py
        reads it once per order, on its first attempt, and keeps it in the order's record: every
        retry sends the same (a default changed meanwhile would be other parameters for the key)."""
        found = self.client.v1.customers.retrieve(customer)
        method = (found.to_dict().get("invoice_settings") or {}).get("default_payment_method")
        return method if isinstance(method, str) else (method or {}).get("id") if isinstance(method, dict) else None

    @staticmethod
    def _metadata(customer: str, reference: str, key: str, order: Mapping[str, str]) -> dict[str, Any]:
        # Names and ids only: "Don't store any sensitive information" as metadata
        # (https://docs.stripe.com/api/metadata). idem_stack: the reconciliation's filter; the
        # order's order_id, bucket and key: what the reconciliation groups charges by.
        return {**{name: str(value)[:MAX_METADATA_CHARS] for name, value in order.items()},
                "account": customer[:MAX_METADATA_CHARS], "reference": reference[:MAX_METADATA_CHARS],
                "idempotency_key": stripe_key(key), "idem_stack": os.environ.get("STACK_NAME", "")[:MAX_METADATA_CHARS]}
