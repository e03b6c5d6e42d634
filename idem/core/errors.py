"""Every exception idem raises on purpose, under one root: `except IdemError` catches them all."""
from __future__ import annotations


class IdemError(Exception):
    """The root of idem's own exceptions."""


class ConfigError(IdemError):
    """The function's environment is missing a setting or has a bad one: it refuses to start."""


class RecordsFailed(IdemError):
    """Some records of the event failed; the rest were processed and will dedupe on retry."""


class WorkInProgress(IdemError):
    """Another invocation holds a live lease on this work: fail, and let Lambda retry."""


class LostOwnership(IdemError):
    """A commit was refused: the record is no longer this invocation's to finish."""


class ProviderError(IdemError):
    """The payment provider refused the request."""


class IdempotencyKeyReused(ProviderError):
    """The key was first used with other parameters (Stripe answers 400 here)."""
