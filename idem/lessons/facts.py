"""Numbers that more than one chapter states, each defined once, with its source.

A chapter may write a number in words ("six hours") or in digits ("24 hours"); each fact lists
the phrases the chapters use, with `{}` where the number goes. `tests/test_shared_numbers.py`
reads every chapter and the glossary, finds each phrase, and fails where the number written
there is not the one below, or where a fact is stated in fewer than two places.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.reconcile.audit import MAX_INVOCATION_SECONDS
from ..sim.runtime import DEFAULT_MAX_EVENT_AGE
from .scribes.key_stories import STRIPE_MAX_KEY_CHARS

WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 10: "ten"}
#: Stripe: "API endpoints have a default limit of 25 requests per second" (rate-limits page).
STRIPE_ENDPOINT_REQUESTS_PER_SECOND = 25


@dataclass(frozen=True)
class Fact:
    name: str
    value: int
    source: str
    phrases: tuple[str, ...]  # how the chapters write it; "{}" is the number, in digits or words

    def spellings(self) -> tuple[str, ...]:
        return (f"{self.value:,}", str(self.value)) + ((WORDS[self.value],) if self.value in WORDS else ())


FACTS = (
    Fact("Stripe's key window, in hours", 24, "https://docs.stripe.com/idempotency",
         ("prune a key once it is {} hours old", "Stripe keeps keys for at least {} hours",
          "The key guards the first {} hours", "Stripe: at least {} hours")),
    Fact("Stripe's longest idempotency key, in characters", STRIPE_MAX_KEY_CHARS,
         "https://docs.stripe.com/idempotency",
         ("Stripe's keys are at most {} characters", "Stripe takes keys of at most {} characters",
          "Stripe keys are at most {} characters")),
    Fact("Lambda's default maximum event age, in hours", DEFAULT_MAX_EVENT_AGE // 3600,
         "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html",
         ("It is {} hours by default", "keeps an event at most {} hours",
          "deliver one for {} hours by default")),
    Fact("how soon DynamoDB's TTL typically deletes an expired item, in days", 2,
         "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html",
         ("within {} days of its expiry", "within {} days of expiry", "typically within {} days")),
    Fact("Stripe's default rate limit for one endpoint, in requests per second", STRIPE_ENDPOINT_REQUESTS_PER_SECOND,
         "https://docs.stripe.com/rate-limits",
         ("Stripe allows {} requests per", "sized to Stripe's {} requests per second")),
    Fact("Lambda's longest timeout, in seconds", MAX_INVOCATION_SECONDS,
         "https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html",
         ("other is {} s, the 15-minute maximum", "invocation with a {} s timeout holds",
          "With a {} s timeout, every retry")),
)
