"""How many uploads a second the production stack charges, and how many copies of the charge
function Stripe's rate limits allow: the arithmetic behind template.yaml's ReservedConcurrency,
BatchSize and Timeout (the time budget itself is idem/core/buffer.py's, from keyed_settings).

Stripe's limits (https://docs.stripe.com/rate-limits): live mode 100 requests a second for the
account (a sandbox, test mode: 25), and "API endpoints have a default limit of 25 requests per
second", each named operation its own endpoint (POST /v1/payment_intents is one). A copy of the
function charges its batch's uploads one after another, so N copies make at most N / (seconds
per upload) uploads a second, each upload `STRIPE_REQUESTS` requests. The copies are sized for
the fastest upload (FASTEST_UPLOAD_SECONDS): the rate is highest when Stripe answers quickest.
A 429 fails that upload only; it comes back from the queue after the visibility timeout.
"""
from __future__ import annotations

import math
from typing import Any

from ..core import buffer

#: Stripe's published limits, requests per second (https://docs.stripe.com/rate-limits).
STRIPE_LIVE_LIMIT = 100
STRIPE_SANDBOX_LIMIT = 25
STRIPE_ENDPOINT_LIMIT = 25
#: The Stripe requests one upload makes on keyed's usual path (keyed_stripe.py): the customer's
#: saved payment method (GET /v1/customers/{id}), then the charge (POST /v1/payment_intents).
STRIPE_REQUESTS = {"GET /v1/customers/{id}": 1, "POST /v1/payment_intents": 1}
#: The quickest a confirmed charge comes back, the floor the copies are sized for (our choice:
#: well under the 0.8-1.5 s usually seen, so a fast hour at Stripe still stays under its limit).
FASTEST_UPLOAD_SECONDS = 0.2


def uploads_per_second_per_copy(seconds_per_upload: float) -> float:
    """One copy of the function, charging its batch's uploads in sequence."""
    return 1.0 / seconds_per_upload


def copies_within_stripes_limits(seconds_per_upload: float, mode: str = "live") -> int:
    """The most copies whose requests stay within Stripe's account limit (live or sandbox) and
    every endpoint's 25 a second, when each upload takes `seconds_per_upload`."""
    account = STRIPE_LIVE_LIMIT if mode == "live" else STRIPE_SANDBOX_LIMIT
    rate = uploads_per_second_per_copy(seconds_per_upload)
    by_account = account / (rate * sum(STRIPE_REQUESTS.values()))
    by_endpoint = STRIPE_ENDPOINT_LIMIT / (rate * max(STRIPE_REQUESTS.values()))
    return max(0, math.floor(min(by_account, by_endpoint) + 1e-9))


def report(handler_seconds: float = 0.0) -> dict[str, Any]:
    """The numbers `idem bench` prints: `handler_seconds` is the handler's own time per upload,
    measured (its DynamoDB and S3 calls through moto, the loopback Stripe's answer); Stripe's
    own time is added to it, at its quickest and at its usual."""
    fastest = FASTEST_UPLOAD_SECONDS + handler_seconds
    usual = buffer.USUAL_UPLOAD_SECONDS + handler_seconds
    live, sandbox = copies_within_stripes_limits(fastest), copies_within_stripes_limits(fastest, "sandbox")
    return {
        "handler_seconds_per_upload": round(handler_seconds, 4),
        "uploads_per_second_per_copy": {"fastest": round(uploads_per_second_per_copy(fastest), 2),
                                        "usual": round(uploads_per_second_per_copy(usual), 2)},
        "copies_within_stripe_live": live, "copies_within_stripe_sandbox": sandbox,
        "uploads_per_second_at_live_copies_usual": round(live * uploads_per_second_per_copy(usual), 2),
        "batch_size": buffer.PROD.batch_size,
        "batch_seconds": {"usual": buffer.batch_seconds(buffer.PROD.batch_size, buffer.USUAL_UPLOAD_SECONDS),
                          "design": buffer.batch_seconds(buffer.PROD.batch_size, buffer.DESIGN_UPLOAD_SECONDS)},
        "function_timeout_seconds": buffer.PROD.function_timeout_seconds,
        "visibility_timeout_seconds": buffer.PROD.visibility_timeout_seconds,
    }


def format_report(numbers: dict[str, Any]) -> str:
    per_copy = numbers["uploads_per_second_per_copy"]
    return "\n".join([
        f"throughput (one copy charges its batch in sequence; handler's own time {numbers['handler_seconds_per_upload'] * 1000:.1f} ms an upload, measured):",
        f"  uploads/s per unit of concurrency: {per_copy['usual']} at Stripe's usual {buffer.USUAL_UPLOAD_SECONDS} s, "
        f"{per_copy['fastest']} at its quickest {FASTEST_UPLOAD_SECONDS} s",
        f"  copies within Stripe's limits (https://docs.stripe.com/rate-limits): live {numbers['copies_within_stripe_live']}, "
        f"sandbox {numbers['copies_within_stripe_sandbox']} (ReservedConcurrency)",
        f"  at {numbers['copies_within_stripe_live']} copies: {numbers['uploads_per_second_at_live_copies_usual']} uploads/s usual",
        f"  a batch of {numbers['batch_size']} needs {numbers['batch_seconds']['usual']:g} s usual, "
        f"{numbers['batch_seconds']['design']:g} s at twice that: timeout {numbers['function_timeout_seconds']} s, "
        f"visibility {numbers['visibility_timeout_seconds']} s (six times)",
    ])
