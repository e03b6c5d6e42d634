"""Stripe, through its own SDK, as the payment provider of the handler to copy (keyed.py).

Copy this file beside keyed.py and add `stripe` (16.x) to the function's requirements.
keyed.py's `make_provider()` imports it by its plain name when STRIPE_SECRET_PARAMETER is
set; this file imports nothing from keyed.py, so the two run from any folder.

What it does, with Stripe's API v1 rules (facts cited where they are used):
- `charge` creates and confirms a PaymentIntent in one call, with keyed's idempotency key as
  Stripe's `Idempotency-Key` (hashed when longer than Stripe's 255 characters), and metadata
  that name the upload: the account, the object's reference and the idempotency key itself;
  the key is a hash of the bucket, the object key and the version id (or, unversioned, the
  eTag and the sequencer), so it names the exact upload.
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
from typing import Any

import stripe

#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
MAX_KEY_CHARS = 255
#: Metadata: "values up to 500 characters long" (https://docs.stripe.com/api/metadata).
MAX_METADATA_CHARS = 500
#: The SDK's own retries of one request, with the same Idempotency-Key on each
#: (stripe-python: connection errors, 409 and 5xx are retried after 0.5 s, then 1 s, ...:
#: https://github.com/stripe/stripe-python#configuring-automatic-retries). StripeClient's
#: default is no retry at all. One retry, with a 2 s connect and 8 s read timeout per
#: attempt, costs at most 2 x 10 s + 1 s = 21 s: it fits inside the stack's 30 s Lambda
#: timeout with the claim and the commit, and absorbs the commonest blip (a dropped
#: connection) without spending Lambda's retry, which comes a minute later. More retries
#: would outlive the invocation; Lambda's own retries (same key) do the rest.
MAX_NETWORK_RETRIES = 1
TIMEOUT_SECONDS = (2.0, 8.0)  # (connect, read), per attempt
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


def stripe_key(key: str) -> str:
    """keyed's key as Stripe takes it: unchanged up to 255 characters, else its SHA-256."""
    return key if len(key) <= MAX_KEY_CHARS else "sha256-" + hashlib.sha256(key.encode("utf-8")).hexdigest()


class StripeProvider:
    """keyed.py's PaymentProvider over a `stripe.StripeClient`."""

    def __init__(self, client: stripe.StripeClient, payment_method: str = "pm_card_visa") -> None:
        # In test mode a test PaymentMethod charges without a card number
        # (https://docs.stripe.com/testing). In production, look up the account's Stripe
        # customer and saved payment method here instead.
        self.client, self.payment_method = client, payment_method

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
        return cls(client, payment_method)

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None) -> StripeCharge:
        """Create and confirm a PaymentIntent; the same key replays the first answer for 24 h."""
        key = idempotency_key or ""
        intent = self.client.v1.payment_intents.create(
            params={"amount": amount, "currency": currency, "confirm": True, "off_session": True,
                    "payment_method": self.payment_method,
                    # No redirect can happen in a Lambda: refuse such methods at once.
                    "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
                    "metadata": self._metadata(customer, reference, key)},
            options={"idempotency_key": stripe_key(key)} if key else {})
        return StripeCharge(str(intent.id), key, int(intent.amount))

    def find_charges(self, reference: str, idempotency_key: str) -> list[StripeCharge]:
        """The charges made with this upload's key, however old (Stripe's search, above)."""
        query = f"metadata['idempotency_key']:'{stripe_key(idempotency_key)}'"
        found = self.client.v1.payment_intents.search(params={"query": query, "limit": 10})
        return [StripeCharge(str(intent.id), idempotency_key, int(intent.amount)) for intent in found.auto_paging_iter()
                if intent.status in CHARGED
                and (intent.to_dict().get("metadata") or {}).get("reference") == reference[:MAX_METADATA_CHARS]]

    @staticmethod
    def _metadata(customer: str, reference: str, key: str) -> dict[str, Any]:
        # Names and ids only: "Don't store any sensitive information" as metadata
        # (https://docs.stripe.com/api/metadata).
        return {"account": customer[:MAX_METADATA_CHARS], "reference": reference[:MAX_METADATA_CHARS],
                "idempotency_key": stripe_key(key),
                # the stack's name (template.yaml sets STACK_NAME): the reconciliation's search filter
                "idem_stack": os.environ.get("STACK_NAME", "")[:MAX_METADATA_CHARS]}
