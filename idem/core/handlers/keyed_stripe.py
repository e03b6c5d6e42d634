"""Who charges, for the handler to copy (keyed.py): Stripe, through its SDK (`stripe` 16.x, imported when the
client is built at cold start, with the secret key from SSM), and what each of its answers means. A PaymentIntent
is created and confirmed in one call, the order's key its Idempotency-Key; `find_charges` searches by that key."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

import boto3  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import log
    from keyed_settings import ConfigError, NeedsAttention, ProviderAuthFailed, aws_config, bounded
else:
    from .keyed_events import log  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ConfigError, NeedsAttention, ProviderAuthFailed, aws_config, bounded)
if TYPE_CHECKING:
    import stripe
    from stripe.params import PaymentIntentCreateParams


class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (StripeProvider, below, adapts Stripe's SDK to it)."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str, idempotency_key: str | None = None,
               metadata: Mapping[str, str] | None = None, payment_method: str | None = None) -> Any:
        """Charge `amount` (by the first attempt's `payment_method`, if any); a key replays it; returns it (`.id`)."""


def make_provider() -> PaymentProvider:
    """Stripe's client, built once per container with the secret key read from SSM (STRIPE_SECRET_PARAMETER)."""
    parameter = os.environ.get("STRIPE_SECRET_PARAMETER", "")
    if not parameter:
        raise ConfigError("STRIPE_SECRET_PARAMETER is not set: name the SSM SecureString that holds "
                          "your Stripe secret key, or replace make_provider() with your provider's client")
    ssm = bounded(boto3.client("ssm", config=aws_config()))
    secret = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    check_key_mode(secret, os.environ.get("STAGE", ""))
    # STRIPE_API_BASE aims the client at another Stripe (the workbook's loopback one); unset: Stripe's.
    return StripeProvider.from_secret(secret, os.environ.get("STRIPE_API_BASE") or None)


#: Stripe's secret and restricted keys say their mode: sk_live_/rk_live_ move real money,
#: sk_test_/rk_test_ never do (https://docs.stripe.com/keys).
LIVE_KEYS, TEST_KEYS = ("sk_live_", "rk_live_"), ("sk_test_", "rk_test_")


def check_key_mode(secret: str, stage: str) -> None:
    """At cold start: a live key only where STAGE is prod, a test key elsewhere; else ConfigError (never the key)."""
    live, test = secret.startswith(LIVE_KEYS), secret.startswith(TEST_KEYS)
    problem = ("the Stripe key is neither a live nor a test secret or restricted key" if not (live or test)
               else f"a live Stripe key where STAGE is {stage or 'unset'}, not prod: it would charge real "
                    "cards from a test stage" if live and stage != "prod"
               else "a test Stripe key where STAGE is prod: no real charge would ever be made"
               if test and stage == "prod" else "")
    if problem:
        log.error(f"refused to start: {problem}; nothing was charged")
        raise ConfigError(f"refused to start: {problem}")


#: What an answer means: made, made but not settled, refused for good, try again, a person must look;
#: AUTH: the secret key was refused (401: rolled, expired or revoked): read it again, retry, count it.
CHARGED, PENDING, DECLINED, RETRY, ATTENTION = "charged", "pending", "declined", "retry", "needs_attention"
AUTH = "auth_failed"
#: Statuses after create-and-confirm (https://docs.stripe.com/payments/paymentintents/lifecycle): `processing` and
#: `requires_capture` (held, see payments/capture-later) settle later; `requires_action` off-session is a decline.
INTENT_MEANS = {"succeeded": CHARGED, "requires_capture": PENDING, "processing": PENDING,
                "requires_action": DECLINED, "requires_payment_method": DECLINED, "requires_confirmation": DECLINED,
                "canceled": DECLINED}
#: Codes for which a later try can succeed (https://docs.stripe.com/rate-limits,
#: https://docs.stripe.com/error-codes#lock-timeout, 409 idempotency_key_in_use:
#: https://docs.stripe.com/error-low-level#idempotency).
RETRY_CODES = ("rate_limit", "lock_timeout", "idempotency_key_in_use")


@dataclass(frozen=True)
class Meaning:
    """What one answer means: `what` (above), Stripe's error `code` and `decline_code`, a reason; `unsent`: no money."""
    what: str
    code: str = ""
    decline_code: str = ""
    reason: str = ""
    unsent: bool = False


def meaning_of(error: BaseException) -> Meaning:
    """What a provider's error means, by Stripe's error `type` and `code` (https://docs.stripe.com/api/errors)."""
    detail = getattr(error, "error", None)  # stripe-python: the ErrorObject of the response
    kind = str(getattr(detail, "type", None) or getattr(error, "type", None) or "")
    code = str(getattr(error, "code", None) or getattr(detail, "code", None) or "")
    decline = str(getattr(detail, "decline_code", None) or getattr(error, "decline_code", None) or "")
    status = getattr(error, "http_status", None)
    reason = str(getattr(error, "user_message", None) or error)[:300]
    if status in (401, 403) or type(error).__name__ in ("AuthenticationError", "PermissionError"):
        # "No valid API key provided", 403: "The API key doesn't have permissions" (https://docs.stripe.com/api/errors)
        return Meaning(AUTH, code or str(status or 401), "", reason)
    if code in RETRY_CODES or status in (409, 429):  # a key in flight, too many requests, a lock
        return Meaning(RETRY, code or str(status), "", reason)
    if kind == "card_error" or status == 402:
        return Meaning(DECLINED, code or "card_declined", decline, reason)
    if kind == "idempotency_error" or status == 500:
        # "Retries with the same key return the saved response, including 500 errors"
        # (https://docs.stripe.com/api/idempotent_requests): no retry can succeed for 24 h.
        return Meaning(ATTENTION, code or kind or "500", "", reason)
    if status is None or kind == "api_error" or (isinstance(status, int) and status > 500):
        return Meaning(RETRY, code or kind or str(status or "no answer"), "", reason)  # not executed: retry
    return Meaning(ATTENTION, code or kind or str(status), "", reason,  # unsent: a 400 with no PaymentIntent in it
                   status == 400 and kind == "invalid_request_error" and not getattr(detail, "payment_intent", None))


def why_refused(error: BaseException, meaning: Meaning, key: str, rec: Any, until: str) -> tuple[bool, str]:
    """Whether a charge Stripe refused moved nothing under its key (no earlier attempt sent one: the record is unsent;
    a 400 refusal, or an idempotency_error after one: the record keeps its code), and why it is parked."""
    unsent = rec.unsent is True and (meaning.unsent or "idempotency" in meaning.code and "code" in (rec.result or {}))
    return unsent, (f"the provider answered {getattr(error, 'http_status', None) or ''} {meaning.code} for key "
                    f"{key[:32]}... ({meaning.reason}); " + (
                        f"nothing was charged: fix it, upload it again (Stripe may refuse a fix under the key until "
                        f"{until})" if unsent else "no retry with this key can succeed, and a new key could charge "
                        "twice: find the charge at the provider (`idem settle`), then book or refund it"))


def meaning_unless_auth(error: BaseException) -> Meaning:
    """What an error means; a refused secret key raises ProviderAuthFailed (read again on the retry, counted)."""
    meaning = meaning_of(error)
    if meaning.what == AUTH:
        raise ProviderAuthFailed(f"the provider refused the secret key ({meaning.code}: {meaning.reason[:120]}); it is"
                                 " read again on the retry: check that STRIPE_SECRET_PARAMETER holds the current key"
                                 ) from error
    return meaning


def read_saved_method(read: Callable[[str], str | None], customer: str) -> str:
    """The customer's saved default method (none: NeedsAttention, nothing sent); a 5xx is raised as it came."""
    try:
        if method := read(customer):
            return method
        raise NoPaymentMethod(f"customer {customer} has no saved default payment method: save one, then re-send it")
    except Exception as error:
        meaning, status = meaning_unless_auth(error), getattr(error, "http_status", None)
        if meaning.what == RETRY or (meaning.what == ATTENTION and int(status or 500) >= 500):  # a 5xx, no answer
            raise
        raise NeedsAttention(f"reading customer {customer}'s payment method failed ({meaning.code}: "
                             f"{meaning.reason}); nothing was charged") from None


def charges_with_key(provider: Any, reference: str, key: str) -> list[Any]:
    """Every charge made with this key (its metadata), money moved or moving; raises when there is no answer."""
    find = getattr(provider, "find_charges", None)
    if find is None:
        raise LookupError("the provider offers no look-up")
    return [c for c in find(reference, key) if getattr(c, "idempotency_key", None) == key]


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
MONEY_MOVED = ("succeeded", "processing", "requires_capture")


@dataclass(frozen=True)
class StripeCharge:
    """A charge: its id, its key, the amount it took, its status, and (when found) its currency and customer."""

    id: str
    idempotency_key: str
    amount: int
    status: str = "succeeded"  # INTENT_MEANS says what it means
    currency: str = ""
    customer: str = ""


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
        self.client, self.test_method = client, None if live else payment_method

    @classmethod
    def from_secret(cls, secret: str, api_base: str | None = None,
                    http_client: stripe.HTTPClient | None = None) -> StripeProvider:
        """A client for a secret key; `api_base` aims it elsewhere (the workbook's loopback Stripe)."""
        import stripe  # here: only a function that charges through Stripe needs the package

        client = stripe.StripeClient(
            secret, max_network_retries=MAX_NETWORK_RETRIES,
            http_client=http_client or stripe.RequestsClient(timeout=TIMEOUT_SECONDS),
            base_addresses={"api": api_base} if api_base else {})
        return cls(client, live=secret.startswith(LIVE_KEYS))

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, payment_method: str | None = None,
               metadata: Mapping[str, str] | None = None) -> StripeCharge:
        """Create and confirm a PaymentIntent; the same key replays the first answer for 24 h."""
        key, cus = idempotency_key or "", customer.startswith("cus_")
        method = payment_method or (self.saved_method(customer) if cus else self.test_method)
        if not method:
            raise NoPaymentMethod(f"no Stripe customer with a saved payment method for {customer[:60]!r}: name "
                                  "`customer` (cus_...) in the order, with a default payment method saved")
        # Metadata: names and ids only (https://docs.stripe.com/api/metadata); idem_stack: the reconciliation's filter.
        tags = {**(metadata or {}), "account": customer, "reference": reference, "idempotency_key": stripe_key(key),
                "idem_stack": os.environ.get("STACK_NAME", "")}
        params: PaymentIntentCreateParams = {
            "amount": amount, "currency": currency, "confirm": True, "off_session": True, "payment_method": method,
            # No redirect can happen in a Lambda: refuse such methods at once.
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            "metadata": {name: str(value)[:MAX_METADATA_CHARS] for name, value in tags.items()}}
        if cus:
            params["customer"] = customer
        intent = self.client.v1.payment_intents.create(params=params,
                                                        options={"idempotency_key": stripe_key(key)} if key else {})
        return StripeCharge(str(intent.id), key, int(intent.amount), str(intent.status or "succeeded"))

    def find_charges(self, reference: str, idempotency_key: str) -> list[StripeCharge]:
        """The charges made with this order's key, however old (`reference` is not used)."""
        query = f"metadata['idempotency_key']:'{stripe_key(idempotency_key)}'"
        found = self.client.v1.payment_intents.search(params={"query": query, "limit": 10})
        return [StripeCharge(str(intent.id), idempotency_key, int(intent.amount), str(intent.status),
                             str(intent.currency or ""), str(intent.customer or ""))
                for intent in found.auto_paging_iter()
                if intent.status in MONEY_MOVED
                and (intent.to_dict().get("metadata") or {}).get("idempotency_key") == stripe_key(idempotency_key)]

    def saved_method(self, customer: str) -> str | None:
        """The customer's default payment method (https://docs.stripe.com/api/customers/object), or None."""
        found = self.client.v1.customers.retrieve(customer).to_dict()
        if found.get("deleted"):  # retrieve answers a deleted customer with its id and `deleted: true`
            raise NoPaymentMethod(f"customer {customer} is deleted at Stripe: link the account to another customer")
        method = (found.get("invoice_settings") or {}).get("default_payment_method")
        return method if isinstance(method, str) else (method or {}).get("id") if isinstance(method, dict) else None
