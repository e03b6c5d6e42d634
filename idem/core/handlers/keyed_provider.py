"""Who charges, for the handler to copy (keyed.py): Stripe's client built at cold start (keyed_stripe.py;
the workbook and `idem check` replace keyed.make_provider), and what each of Stripe's answers means."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import boto3  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import log
    from keyed_settings import ConfigError, NeedsAttention, ProviderAuthFailed, aws_config
else:
    from .keyed_events import log  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ConfigError, NeedsAttention, ProviderAuthFailed, aws_config)


class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (keyed_stripe.py adapts Stripe's SDK to it)."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, metadata: Mapping[str, str] | None = None) -> Any:
        """Move `amount`; the same key replays the first charge. Returns an object with its `id`."""


def make_provider() -> PaymentProvider:
    """Stripe's client, built once per container with the secret key read from SSM (STRIPE_SECRET_PARAMETER)."""
    parameter = os.environ.get("STRIPE_SECRET_PARAMETER", "")
    if not parameter:
        raise ConfigError("STRIPE_SECRET_PARAMETER is not set: name the SSM SecureString that holds "
                          "your Stripe secret key, or replace make_provider() with your provider's client")
    ssm = boto3.client("ssm", config=aws_config())
    secret = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    check_key_mode(secret, os.environ.get("STAGE", ""))
    if COPIED:  # imported here: only a function that charges through Stripe needs the `stripe` package
        from keyed_stripe import StripeProvider
    else:
        from .keyed_stripe import StripeProvider  # type: ignore[import-not-found, no-redef, unused-ignore]

    # STRIPE_API_BASE aims the client at another Stripe (the workbook's loopback one); unset: Stripe's.
    provider: PaymentProvider = StripeProvider.from_secret(secret, os.environ.get("STRIPE_API_BASE") or None)
    return provider


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
#: A PaymentIntent's status after create-and-confirm (https://docs.stripe.com/payments/paymentintents/lifecycle):
#: `processing` settles later; `requires_action` off-session is a decline (no one is there to authenticate).
INTENT_MEANS = {"succeeded": CHARGED, "requires_capture": CHARGED, "processing": PENDING,
                "requires_action": DECLINED, "requires_payment_method": DECLINED, "requires_confirmation": DECLINED,
                "canceled": DECLINED}
#: Codes for which a later try can succeed (https://docs.stripe.com/rate-limits,
#: https://docs.stripe.com/error-codes#lock-timeout, 409 idempotency_key_in_use:
#: https://docs.stripe.com/error-low-level#idempotency).
RETRY_CODES = ("rate_limit", "lock_timeout", "idempotency_key_in_use")


@dataclass(frozen=True)
class Meaning:
    """What one answer means: `what` (above), Stripe's error `code` and `decline_code`, a reason."""
    what: str
    code: str = ""
    decline_code: str = ""
    reason: str = ""


def meaning_of(error: BaseException) -> Meaning:
    """What a provider's error means, by Stripe's error `type` and `code` (https://docs.stripe.com/api/errors)."""
    detail = getattr(error, "error", None)  # stripe-python: the ErrorObject of the response
    kind = str(getattr(detail, "type", None) or getattr(error, "type", None) or "")
    code = str(getattr(error, "code", None) or getattr(detail, "code", None) or "")
    decline = str(getattr(detail, "decline_code", None) or getattr(error, "decline_code", None) or "")
    status = getattr(error, "http_status", None)
    reason = str(getattr(error, "user_message", None) or error)[:300]
    if status == 401 or type(error).__name__ == "AuthenticationError":
        # "No valid API key provided" (https://docs.stripe.com/api/errors): nothing executed
        return Meaning(AUTH, code or "401", "", reason)
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
    return Meaning(ATTENTION, code or kind or str(status), "", reason)


def auth_failed(meaning: Meaning) -> ProviderAuthFailed:
    """The error a refused secret key raises: a retry reads the secret again; counted, never parked."""
    return ProviderAuthFailed(f"the provider refused the secret key ({meaning.code}: {meaning.reason[:120]}); "
                              "it is read again on the retry: check that STRIPE_SECRET_PARAMETER holds the current key")


def read_saved_method(read: Callable[[str], str | None], customer: str) -> str | None:
    """The customer's saved default method; a 5xx is raised as it came (a read sends no key: retried)."""
    try:
        return read(customer)
    except Exception as error:
        meaning, status = meaning_of(error), getattr(error, "http_status", None)
        if meaning.what == AUTH:
            raise auth_failed(meaning) from error
        if meaning.what == RETRY or (meaning.what == ATTENTION and int(status or 500) >= 500):  # a 5xx, no answer
            raise
        raise NeedsAttention(f"reading customer {customer}'s payment method failed ({meaning.code}: "
                             f"{meaning.reason}); nothing was charged") from None


def find_charge(provider: Any, reference: str, key: str) -> Any | None:
    """The charge made with this key (its metadata), or None; raises when there is no answer."""
    find = getattr(provider, "find_charges", None)
    if find is None:
        raise LookupError("the provider offers no look-up")
    found = [c for c in find(reference, key) if getattr(c, "idempotency_key", None) == key]
    return found[0] if found else None
