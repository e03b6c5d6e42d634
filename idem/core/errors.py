"""Every exception idem raises on purpose, under one root: `except IdemError` catches them all.

The root and the keyed handler's own exceptions live in `handlers/keyed_settings.py`, beside
the handler to copy; the rest are here.
"""
from __future__ import annotations

from .handlers.keyed_settings import (ConfigError, IdemError, LostOwnership, NeedsAttention, RecordsFailed,
                             WorkInProgress)

__all__ = ["CardDeclined", "ConfigError", "IdemError", "IdempotencyKeyReused", "KeyInFlight",
           "LostOwnership", "NeedsAttention", "ProviderError", "ProviderFailed", "ProviderUnavailable",
           "RecordsFailed", "WorkInProgress"]


class ProviderError(IdemError):
    """The payment provider refused the request. `http_status` is the HTTP status it answered
    with, as Stripe's SDK errors carry it; `replayed` is True when a saved answer came back."""

    http_status = 400

    def __init__(self, message: str = "", *, replayed: bool = False) -> None:
        super().__init__(message)
        self.replayed = replayed


class ProviderUnavailable(ProviderError):
    """The provider failed before executing (503): nothing was saved, a retry may succeed."""

    http_status = 503


class ProviderFailed(ProviderError):
    """The provider failed after executing began (500): the answer is saved for the key, so a
    retry with the same key gets this same 500; whether money moved is for a person to find out."""

    http_status = 500


class KeyInFlight(ProviderError):
    """409: a request with the same idempotency key is in flight; retry later."""

    http_status = 409


class CardDeclined(ProviderError):
    """402: the card was declined. A final answer, not a failure to retry."""

    http_status = 402


class IdempotencyKeyReused(ProviderError):
    """The key was first used with other parameters: Stripe answers 400 with the error type
    `idempotency_error` (https://docs.stripe.com/api/errors)."""
