"""Every exception idem raises on purpose, under one root: `except IdemError` catches them all.

The root and the keyed handler's own exceptions live in `handlers/keyed.py`, so that the
handler to copy stays one file; the rest are here.
"""
from __future__ import annotations

from .handlers.keyed import ConfigError, IdemError, LostOwnership, WorkInProgress

__all__ = ["ConfigError", "IdemError", "IdempotencyKeyReused", "LostOwnership", "ProviderError",
           "RecordsFailed", "WorkInProgress"]


class RecordsFailed(IdemError):
    """Some records of the event failed; the rest were processed and will dedupe on retry."""


class ProviderError(IdemError):
    """The payment provider refused the request."""


class IdempotencyKeyReused(ProviderError):
    """The key was first used with other parameters (Stripe answers 400 here)."""
