"""Who may ask the loopback Stripe: the key's mode, a restricted key's permissions, the rate limiter."""
from __future__ import annotations

import threading
from typing import Callable


def key_mode(api_key: str) -> str | None:
    """The mode a secret or restricted key acts in: "test", "live", or None (not a key).
    Test keys start sk_test_/rk_test_, live ones sk_live_/rk_live_ (https://docs.stripe.com/keys)."""
    for prefix in ("sk_", "rk_"):
        for mode in ("test", "live"):
            if api_key.startswith(f"{prefix}{mode}_") and len(api_key) > len(prefix) + len(mode) + 1:
                return mode
    return None


#: What a restricted key may do unless told otherwise (`StripeAccount.restrict`): what the handler
#: needs and nothing more: PaymentIntents write (create) and read (retrieve, list, search).
#: Restricted keys carry per-resource None/Read/Write permissions (https://docs.stripe.com/keys#limit-access);
#: a request beyond them is refused with 403 (https://docs.stripe.com/api/errors: "403 Forbidden:
#: The API key doesn't have permissions to perform the request").
RESTRICTED: frozenset[str] = frozenset({"payment_intents:read", "payment_intents:write"})


class RateLimiter:
    """Requests per second, counted in one-second windows of `clock` (time.monotonic by default):
    a global limit per mode and a per-endpoint one; search has its own.
    `documented()`: "Live mode: 100 operations; Sandbox: 25 operations ... API endpoints have a
    default limit of 25 requests per second ... Search API: 20 read operations per second"
    (https://docs.stripe.com/rate-limits). A limited request is answered 429 rate_limit and saves nothing."""

    def __init__(self, global_per_second: dict[str, int], endpoint_per_second: int,
                 search_per_second: int, clock: Callable[[], float] | None = None) -> None:
        import time

        self.global_per_second, self.endpoint_per_second = global_per_second, endpoint_per_second
        self.search_per_second = search_per_second
        self.clock = clock or time.monotonic
        self._counts: dict[tuple[str, str, int], int] = {}
        self._lock = threading.Lock()

    @classmethod
    def documented(cls, clock: Callable[[], float] | None = None) -> RateLimiter:
        return cls({"live": 100, "test": 25}, 25, 20, clock)

    def admit(self, mode: str, endpoint: str) -> bool:
        second = int(self.clock())
        limit = self.search_per_second if endpoint.endswith("/search") else self.endpoint_per_second
        with self._lock:
            if len(self._counts) > 10_000:
                self._counts = {k: v for k, v in self._counts.items() if k[2] >= second - 1}
            overall, own = (mode, "", second), (mode, endpoint, second)
            if self._counts.get(overall, 0) >= self.global_per_second[mode] or self._counts.get(own, 0) >= limit:
                return False
            self._counts[overall] = self._counts.get(overall, 0) + 1
            self._counts[own] = self._counts.get(own, 0) + 1
            return True
