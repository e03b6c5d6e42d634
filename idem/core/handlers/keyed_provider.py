"""Who charges, for the handler to copy (keyed.py): what it needs of a payment provider, and
the provider's client built at cold start (Stripe's, through keyed_stripe.py). The workbook's
runtime and `idem check` replace `make_provider` (as keyed.make_provider) with their own.
Copy it beside keyed.py; it imports only the standard library and boto3 (and, when it builds
Stripe's client, keyed_stripe.py and the `stripe` package).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import boto3  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_log import log
    from keyed_settings import ConfigError, NeedsAttention, ProviderAuthFailed, aws_config
else:
    from .keyed_log import log  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ConfigError, NeedsAttention, ProviderAuthFailed, aws_config)


# -- who charges: the payment provider's client, built at cold start ------------------------------
class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (Stripe-shaped; keyed_stripe.py adapts
    Stripe's SDK to it). Errors carry `http_status` as Stripe's do; a lost connection has none."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None, metadata: Mapping[str, str] | None = None) -> Any:
        """Move `amount` (in the currency's smallest unit); the same key replays the first charge.
        `metadata`: what the charge is for (order_id, bucket, key), stored with it.
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
    secret = boto3.client("ssm", config=aws_config()).get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    check_key_mode(secret, os.environ.get("STAGE", ""))
    # Imported here: only a function that charges through Stripe needs it (and the `stripe` package).
    if COPIED:
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
    """At cold start: a live key only where STAGE is prod, a test key everywhere else. Otherwise
    one clear log line and ConfigError: the function starts nowhere, so nothing is charged.
    (The message names the key's mode, never the key.)"""
    live, test = secret.startswith(LIVE_KEYS), secret.startswith(TEST_KEYS)
    problem = ("the Stripe key is neither a live nor a test secret or restricted key" if not (live or test)
               else f"a live Stripe key where STAGE is {stage or 'unset'}, not prod: it would charge real "
                    "cards from a test stage" if live and stage != "prod"
               else "a test Stripe key where STAGE is prod: no real charge would ever be made"
               if test and stage == "prod" else "")
    if problem:
        log.error(f"refused to start: {problem}; nothing was charged")
        raise ConfigError(f"refused to start: {problem}")


# -- what the provider's answer means ---------------------------------------------------------------
#: What to do after each answer: the charge is made (`charged`), made but not settled yet
#: (`pending`), refused for good (`declined`), to try again later (`retry`), or for a person.
CHARGED, PENDING, DECLINED, RETRY, ATTENTION = "charged", "pending", "declined", "retry", "needs_attention"
#: The secret key was refused (401: rolled, expired or revoked): read it again, retry, count it.
AUTH = "auth_failed"
#: A PaymentIntent's status after create-and-confirm, and what it means
#: (https://docs.stripe.com/payments/paymentintents/lifecycle): `processing` can still fail
#: (bank debits, some wallets) and settles later; `requires_action` off-session is a decline the
#: customer must fix (no one is there to authenticate); `requires_payment_method`: it failed.
INTENT_MEANS = {"succeeded": CHARGED, "requires_capture": CHARGED, "processing": PENDING,
                "requires_action": DECLINED, "requires_payment_method": DECLINED, "requires_confirmation": DECLINED,
                "canceled": DECLINED}
#: Error codes Stripe answers when trying again later can succeed: too many requests (429, or 400
#: with code rate_limit, https://docs.stripe.com/rate-limits), an object locked by another request
#: (lock_timeout, https://docs.stripe.com/error-codes#lock-timeout), and a request with the same
#: key in flight (409 idempotency_key_in_use, https://docs.stripe.com/error-low-level#idempotency).
RETRY_CODES = ("rate_limit", "lock_timeout", "idempotency_key_in_use")


@dataclass(frozen=True)
class Meaning:
    """What one answer means: `what` (above), Stripe's error `code` and `decline_code`, a reason."""

    what: str
    code: str = ""
    decline_code: str = ""
    reason: str = ""


def meaning_of(error: BaseException) -> Meaning:
    """What a provider's error means, read from Stripe's error `type` and `code`
    (https://docs.stripe.com/api/errors: api_error, card_error, idempotency_error,
    invalid_request_error), as stripe-python's exceptions carry them (`error.error.type`,
    `error.code`), with the HTTP status only where Stripe gives no type:
    - card_error (402; codes card_declined, authentication_required, expired_card, ...): a final
      decline, with the issuer's decline_code;
    - rate_limit (429, or 400 with code rate_limit) / lock_timeout / a key in flight (409),
      api_error before execution (502, 503, 504) and lost connections (no status at all):
      retry later, with the same key;
    - 401 (a rolled or expired secret key): AUTH, read the key again and retry, never parked;
    - idempotency_error (the key was used with other parameters), a 500 (saved for the key and
      replayed) and invalid requests (400, 403, 404): no retry can succeed, a person must."""
    detail = getattr(error, "error", None)  # stripe-python: the ErrorObject of the response
    kind = str(getattr(detail, "type", None) or getattr(error, "type", None) or "")
    code = str(getattr(error, "code", None) or getattr(detail, "code", None) or "")
    decline = str(getattr(detail, "decline_code", None) or getattr(error, "decline_code", None) or "")
    status = getattr(error, "http_status", None)
    reason = str(getattr(error, "user_message", None) or error)[:300]
    if status == 401 or type(error).__name__ == "AuthenticationError":
        # "401 Unauthorized: No valid API key provided" (https://docs.stripe.com/api/errors): a
        # rolled or expired key (https://docs.stripe.com/keys). Nothing executed; a new key can succeed.
        return Meaning(AUTH, code or "401", "", reason)
    if code in RETRY_CODES or status in (409, 429):  # a key in flight, too many requests, a lock
        return Meaning(RETRY, code or str(status), "", reason)
    if kind == "card_error" or status == 402:
        return Meaning(DECLINED, code or "card_declined", decline, reason)
    if kind == "idempotency_error" or status == 500:
        # A 500 is saved for the key once execution began, and replayed to every retry with it
        # ("Retries with the same key return the saved response, including 500 errors",
        # https://docs.stripe.com/api/idempotent_requests): no retry can succeed for 24 h.
        return Meaning(ATTENTION, code or kind or "500", "", reason)
    if status is None or kind == "api_error" or (isinstance(status, int) and status > 500):
        return Meaning(RETRY, code or kind or str(status or "no answer"), "", reason)  # not executed: retry
    return Meaning(ATTENTION, code or kind or str(status), "", reason)


def meaning_of_read(error: BaseException) -> Meaning:
    """What an error on a READ means (a GET sends no idempotency key, so Stripe saves nothing
    for it): a 5xx, a rate limit or a lost connection is retried like any transient failure,
    never parked; a 401 is the key (AUTH); a 400/403/404 (no such customer) needs a person."""
    meaning = meaning_of(error)
    status = getattr(error, "http_status", None)
    if meaning.what == ATTENTION and (status is None or (isinstance(status, int) and status >= 500)):
        return Meaning(RETRY, meaning.code, "", meaning.reason)
    return meaning


def auth_failed(meaning: Meaning) -> ProviderAuthFailed:
    """The error a refused secret key raises: the invocation fails for a retry (the handler reads
    the secret again) and the metric `auth_failed` counts it; the order is never parked for it."""
    return ProviderAuthFailed(f"the provider refused the secret key ({meaning.code}: {meaning.reason[:120]}); "
                              "it is read again on the retry: check that STRIPE_SECRET_PARAMETER holds the current key")


def read_saved_method(read: Callable[[str], str | None], customer: str) -> str | None:
    """The customer's saved default payment method (`read`: the provider's saved_method). A 5xx
    or a lost answer is raised as it came (retried); a 401 raises ProviderAuthFailed; anything
    else (no such customer) raises NeedsAttention with the reason."""
    try:
        return read(customer)
    except Exception as error:
        meaning = meaning_of_read(error)
        if meaning.what == AUTH:
            raise auth_failed(meaning) from error
        if meaning.what == RETRY:
            raise
        raise NeedsAttention(f"reading customer {customer}'s payment method failed ({meaning.code}: "
                             f"{meaning.reason}); nothing was charged") from None


def find_charge(provider: Any, reference: str, key: str) -> Any | None:
    """The charge the provider made with this key (its metadata), or None; raises when the
    provider offers no look-up or does not answer (the caller parks: never a blind charge)."""
    find = getattr(provider, "find_charges", None)
    if find is None:
        raise LookupError("the provider offers no look-up")
    found = [c for c in find(reference, key) if getattr(c, "idempotency_key", None) == key]
    return found[0] if found else None
