"""Every setting the function reads from its environment, read and checked in one place.

template.yaml sets these on the function; locally, `LocalWorld.env()` does. A setting that
is missing or wrong is a ConfigError at cold start, which says which one and what to do:
a function that would charge wrongly must refuse to start instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .errors import ConfigError
from .handlers.keyed_settings import DAY, ORDER_IDENTITIES, check_lifetimes, check_outlasts

HANDLER_MODES = ("naive", "claim_first", "robust", "keyed")
#: Key recipes that tell every upload apart (chapter 03 shows why the others are unsafe).
SAFE_RECIPES = ("version", "content")


def required(env: Mapping[str, str], name: str) -> str:
    """A setting that must be set."""
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"{name} is not set: template.yaml sets it on the function; "
                          "locally, LocalWorld.env() provides it")
    return value


def whole_number(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    """A setting that is a whole number, `minimum` or more."""
    raw = env.get(name) or str(default)
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be {minimum} or more, got {value}")
    return value


def one_of(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    """A setting that names one of `allowed`."""
    value = env.get(name) or default
    if value not in allowed:
        raise ConfigError(f"{name} is {value!r}; choose one of {', '.join(allowed)}")
    return value


def flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A setting that is 1 or 0 (true or false)."""
    raw = (env.get(name) or ("1" if default else "0")).strip().lower()
    if raw not in ("0", "1", "true", "false"):
        raise ConfigError(f"{name} must be 1 or 0, got {raw!r}")
    return raw in ("1", "true")


@dataclass(frozen=True)
class Settings:
    """The core function's settings."""

    handler_mode: str
    ledger_table: str
    provider_table: str
    record_ttl_seconds: int = DAY
    price_cents: int = 500
    currency: str = "usd"
    key_recipe: str = "version"
    provider_key_retention_seconds: int = DAY  # how long the provider keeps a used key
    max_event_age_seconds: int | None = None  # MaximumEventAgeInSeconds; set: lifetimes are checked
    order_identity: str = "order-id"  # keyed's ORDER_IDENTITY: what one order is (keyed_settings.py)

    def __post_init__(self) -> None:
        if self.max_event_age_seconds is not None:  # the one rule of lifetimes (chapter 07)
            check_lifetimes(self.provider_key_retention_seconds, self.max_event_age_seconds)
            # these patterns' records do expire (keyed's never do)
            check_outlasts("RECORD_TTL_SECONDS", self.record_ttl_seconds, self.max_event_age_seconds, "its record is gone")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        return cls(
            handler_mode=one_of(env, "HANDLER_MODE", "keyed", HANDLER_MODES),
            ledger_table=required(env, "LEDGER_TABLE"),
            provider_table=required(env, "PROVIDER_TABLE"),
            record_ttl_seconds=whole_number(env, "RECORD_TTL_SECONDS", DAY, minimum=1),
            price_cents=whole_number(env, "PRICE_CENTS", 500, minimum=1),
            currency=(env.get("CURRENCY") or "usd").lower(),
            key_recipe=one_of(env, "KEY_RECIPE", "version", SAFE_RECIPES),
            provider_key_retention_seconds=whole_number(env, "PROVIDER_KEY_RETENTION_SECONDS", DAY, minimum=1),
            max_event_age_seconds=(whole_number(env, "MAX_EVENT_AGE_SECONDS", 0)
                                   if env.get("MAX_EVENT_AGE_SECONDS") else None),
            order_identity=one_of(env, "ORDER_IDENTITY", "order-id", ORDER_IDENTITIES),
        )
