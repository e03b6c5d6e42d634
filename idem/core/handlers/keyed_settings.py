"""The settings of the handler to copy (keyed.py), read once per container from the
environment, the lifetimes rule they are checked against at cold start, and the handler's
exceptions. Copy it beside keyed.py; it imports only the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DAY = 24 * 60 * 60

# -- every call bounded: the slowest path of one upload fits in the function's timeout -------------
#: Each AWS client: a connect and a read timeout, and botocore's standard retry mode with one
#: retry (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html: exponential
#: backoff, base 2, with jitter: the first retry waits at most 1 s). botocore's defaults (60 s
#: connect, 60 s read, legacy mode) could spend the whole timeout on one hung call
#: (https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html).
#: DynamoDB answers in milliseconds and an order file is small: 0.75 s of read is ample.
AWS_CONNECT_SECONDS, AWS_READ_SECONDS, AWS_MAX_ATTEMPTS = 0.5, 0.75, 2
#: The provider's client must keep one call within this (keyed_stripe.py: 1 s connect, 3 s
#: read, no retry inside the call: Lambda's retry, with the same key, is the retry).
PROVIDER_CALL_SECONDS = 4.0
#: The slowest path of one upload: at cold start the secret (SSM), then the order file (S3),
#: the claim, the customer mapping (GetItem), the look-up, the customer's saved method and the
#: charge at the provider, the commit. A batch's later upload starts only while this fits
#: (`enough_time`). Three calls lie on rarer paths and are counted only in the worst case
#: (`worst_path_seconds`): a takeover's second put (a lease ran out, or a record was released),
#: keeping the saved method (UpdateItem, an order's first attempt with a cus_ customer) and the
#: put that books a charge whose record a person deleted meanwhile: 40 s, inside the stack's 60 s
#: timeout, so even that path ends before the function does.
AWS_CALLS_ON_SLOWEST_PATH, PROVIDER_CALLS_ON_SLOWEST_PATH = 5, 3
AWS_CALLS_ON_RARER_PATHS = 3


def aws_config() -> Any:
    """The botocore Config every AWS client of the handler is built with."""
    from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]

    return Config(connect_timeout=AWS_CONNECT_SECONDS, read_timeout=AWS_READ_SECONDS,
                  retries={"mode": "standard", "max_attempts": AWS_MAX_ATTEMPTS})


def aws_call_seconds() -> float:
    """The longest one AWS call can take: every attempt timing out, and the backoffs between."""
    backoffs = sum(2.0 ** n for n in range(AWS_MAX_ATTEMPTS - 1))
    return AWS_MAX_ATTEMPTS * (AWS_CONNECT_SECONDS + AWS_READ_SECONDS) + backoffs


def slowest_path_seconds() -> float:
    """The slowest path of an invocation's first upload, the cold start's secret included."""
    return AWS_CALLS_ON_SLOWEST_PATH * aws_call_seconds() + PROVIDER_CALLS_ON_SLOWEST_PATH * PROVIDER_CALL_SECONDS


def worst_path_seconds() -> float:
    """The slowest path with every rarer call too (a takeover, keeping the method, a swept claim)."""
    return slowest_path_seconds() + AWS_CALLS_ON_RARER_PATHS * aws_call_seconds()


def upload_path_seconds() -> float:
    """The slowest path of any later upload of a batch: the same, without the cold start's secret."""
    return slowest_path_seconds() - aws_call_seconds()
#: ORDER_IDENTITY: what makes one order, so that it is charged once however often it is uploaded.
#: - order-id (default): the order file names its order (`{"order_id": ...}`, keyed_orders.py);
#:   an uploader's retried PUT (a second version, same bytes) is the same order: one charge.
#: - object-name: the object's name is the order, for buckets that refuse a second write to a
#:   name (S3 conditional writes, `If-None-Match: *`, required by a bucket policy); no file read.
#: - upload: every upload (every version) is its own order: one charge per upload. Wrong for
#:   orders (a retried PUT is charged twice); kept to show why (the workbook's chapter 03).
ORDER_IDENTITIES = ("order-id", "object-name", "upload")
#: The events that create an order, and are charged (keyed's CHARGE_EVENTS): a PUT, a POST
#: (an HTML form) and a completed multipart upload, as S3 names them in its notifications
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html)
#: and as EventBridge's Object Created events give their `reason`
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html). Not a CopyObject (an
#: archive copy, a replication or a restore makes a new version of an order already charged).
#: EventBridge names a form upload's reason "POST Object", with a space, as it names a deletion's
#: "Lifecycle Expiration" (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventBridge.html);
#: "PostObject" is kept too, so that neither spelling of a form upload is ever skipped.
CHARGE_EVENTS = ("ObjectCreated:Put", "ObjectCreated:Post", "ObjectCreated:CompleteMultipartUpload",
                 "ObjectCreated:PutObject", "ObjectCreated:POST Object", "ObjectCreated:PostObject")


class IdemError(Exception):
    """The root of every exception this handler (and the rest of idem) raises on purpose."""


class ConfigError(IdemError):
    """A setting is missing or wrong: the function refuses to start rather than charge wrongly."""


class WorkInProgress(IdemError):
    """Another invocation holds a live lease on this upload: fail, and let Lambda retry later."""


class LostOwnership(IdemError):
    """A commit was refused: the lease ran out and the upload is no longer ours to finish."""


class NeedsAttention(IdemError):
    """No retry can finish this upload safely: a person must look (the message says why).
    `again`: the order was parked before; it fails again (the event reaches the failure queue)
    but the metric needs_attention counts each parked order once (still_needs_attention counts this)."""

    def __init__(self, *args: object, again: bool = False) -> None:
        super().__init__(*args)
        self.again = again


class ProviderAuthFailed(IdemError):
    """The provider refused the secret key (Stripe: 401, a rolled or expired key): the secret is
    read again on the next attempt and the invocation fails for a retry; never parked."""


class RecordsFailed(IdemError):
    """Some records of the event failed or were unreadable; the rest were processed and will
    be recognised as duplicates when Lambda retries (and, at last, the failure queue gets it)."""



# -- settings, read once per container (from the environment: `settings_from_env`, below) ----------
@dataclass(frozen=True)
class Settings:
    table: str
    # The money settings (docs/money_contract.md): the currencies an order may be charged in (an
    # allow-list, lower case), and the bounds of one order's amount, in the smallest unit.
    # MIN: Stripe's minimum charge in USD is $0.50
    # (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts).
    currencies: tuple[str, ...] = ("usd",)
    min_amount_cents: int = 50
    max_amount_cents: int = 100_000
    # The price of one upload in the modes that read no order file (object-name, upload):
    # required there, never a fallback for an order file that names no amount.
    price_per_upload_cents: int | None = None
    record_ttl_seconds: int = DAY  # the lifetimes rule's record TTL (keyed's claims never expire)
    # How long the provider keeps a used key (Stripe: it may prune keys 24 h old).
    provider_key_retention_seconds: int = DAY
    # How long Lambda keeps retrying an event (the function's MaximumEventAgeInSeconds, 60 to
    # 21,600): set it, and the lifetimes are checked against it at cold start.
    max_event_age_seconds: int | None = None
    # The function's Timeout (Lambda does not tell the code): set it, and a claim is known
    # to outlive the longest invocation.
    function_timeout_seconds: int | None = None
    order_identity: str = "order-id"  # one of ORDER_IDENTITIES
    charge_events: tuple[str, ...] = CHARGE_EVENTS  # CHARGE_EVENTS, comma-separated: what is charged

    def __post_init__(self) -> None:  # the rule below; with neither age nor timeout set, nothing to check
        if self.order_identity not in ORDER_IDENTITIES:
            raise ConfigError(f"ORDER_IDENTITY is {self.order_identity!r}; it must be one of {', '.join(ORDER_IDENTITIES)}")
        if self.order_identity != "order-id" and not self.price_per_upload_cents:
            raise ConfigError(f"ORDER_IDENTITY={self.order_identity} reads no order file: set PRICE_PER_UPLOAD_CENTS, "
                              "the price of one upload (nothing is charged without it)")
        if not self.currencies or not all(len(c) == 3 and c.isalpha() and c.islower() for c in self.currencies):
            raise ConfigError(f"CURRENCIES is {','.join(self.currencies)!r}: name ISO codes in lower case, e.g. usd,eur")
        if not 1 <= self.min_amount_cents <= self.max_amount_cents:
            raise ConfigError(f"MIN_AMOUNT_CENTS ({self.min_amount_cents}) must be 1 or more and at most "
                              f"MAX_AMOUNT_CENTS ({self.max_amount_cents})")
        if not self.charge_events or not all(n.startswith("ObjectCreated:") for n in self.charge_events):
            raise ConfigError(f"CHARGE_EVENTS is {','.join(self.charge_events)!r}: name S3's ObjectCreated "
                              "events that create an order, e.g. ObjectCreated:Put,ObjectCreated:Post")
        check_lifetimes(self.record_ttl_seconds, self.provider_key_retention_seconds,
                        self.max_event_age_seconds, self.function_timeout_seconds)
        if self.function_timeout_seconds is not None and slowest_path_seconds() >= self.function_timeout_seconds:
            raise ConfigError(f"FUNCTION_TIMEOUT_SECONDS is {self.function_timeout_seconds} s, and one upload's "
                              f"slowest path can take {slowest_path_seconds():g} s: raise the timeout")

    @property
    def currency(self) -> str:
        """The currency of an order that names none: the only one allowed (else the order must name it)."""
        return self.currencies[0] if len(self.currencies) == 1 else ""


# -- settings from the environment, and the lifetimes rule checked at cold start -------------------
#: How long a claim must outlive the function's timeout: DynamoDB's TTL sweep must never
#: delete a claim while its invocation can still be charging (cold-start rule, below).
CLAIM_MARGIN_SECONDS = 60
#: How long before the provider's key window ends the handler stops trusting the key alone and
#: searches for the charge first: one hour, because Stripe's search "can be up to an hour behind
#: during outages" (https://docs.stripe.com/api/payment_intents/search). From 23 h on, every
#: charge made in the key's first 22 h is searchable, and anything newer the key still replays.
KEY_AGE_MARGIN_SECONDS = 3600


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """The settings the function's environment names (template.yaml sets them)."""
    table = env.get("LEDGER_TABLE", "")
    if not table:
        raise ConfigError("LEDGER_TABLE is not set: name the DynamoDB table of idempotency records")
    if env.get("PRICE_CENTS") or env.get("CURRENCY"):  # never silently ignored: they once priced a file
        raise ConfigError("PRICE_CENTS and CURRENCY are no longer read: an order file names its amount_cents "
                          "(and currency, from CURRENCIES); a mode with no order file uses PRICE_PER_UPLOAD_CENTS")
    optional = {name: _whole(env, name, 1) if env.get(name) else None
                for name in ("MAX_EVENT_AGE_SECONDS", "FUNCTION_TIMEOUT_SECONDS", "PRICE_PER_UPLOAD_CENTS")}
    return Settings(table, tuple(c.strip().lower() for c in (env.get("CURRENCIES") or "usd").split(",") if c.strip()),
                    _whole(env, "MIN_AMOUNT_CENTS", 50), _whole(env, "MAX_AMOUNT_CENTS", 100_000),
                    optional["PRICE_PER_UPLOAD_CENTS"],
                    _whole(env, "RECORD_TTL_SECONDS", DAY), _whole(env, "PROVIDER_KEY_RETENTION_SECONDS", DAY),
                    optional["MAX_EVENT_AGE_SECONDS"], optional["FUNCTION_TIMEOUT_SECONDS"],
                    env.get("ORDER_IDENTITY") or "order-id",
                    tuple(n.strip() for n in env["CHARGE_EVENTS"].split(",") if n.strip())
                    if env.get("CHARGE_EVENTS") else CHARGE_EVENTS)


def check_lifetimes(record_ttl: int, key_retention: int, max_event_age: int | None,
                    timeout: int | None = None) -> None:
    """The rule every lifetime obeys, checked at cold start:
    - as long as Lambda can still deliver a copy of an event (its retries and its own
      duplicates, up to the maximum event age), a record must still turn it away and the
      provider must still know its key (copies re-sent later from the failure queue are
      older than both: they are looked up at the provider before any charge);
    - a claim must outlive the invocation that holds it (the function's timeout and a
      margin): else DynamoDB's TTL may sweep it during a slow provider call."""
    if max_event_age is not None:
        if not 60 <= max_event_age <= 21_600:
            raise ConfigError(f"MAX_EVENT_AGE_SECONDS is {max_event_age}; Lambda allows 60 to 21600")
        for name, value in (("RECORD_TTL_SECONDS", record_ttl),
                            ("PROVIDER_KEY_RETENTION_SECONDS", key_retention)):
            if value < max_event_age:
                raise ConfigError(
                    f"{name} is {value} s, shorter than MAX_EVENT_AGE_SECONDS ({max_event_age} s): "
                    "Lambda may still retry or re-deliver an event after "
                    + ("its record is gone, and charge it again" if name == "RECORD_TTL_SECONDS"
                       else "the provider has forgotten its key, and charge it again")
                    + f"; raise {name} to {max_event_age} or more, or lower the maximum event age")
    if timeout is not None and record_ttl < timeout + CLAIM_MARGIN_SECONDS:
        raise ConfigError(
            f"RECORD_TTL_SECONDS is {record_ttl} s, shorter than the function's timeout "
            f"({timeout} s) and a {CLAIM_MARGIN_SECONDS} s margin: DynamoDB's TTL could delete a "
            f"claim while its invocation is still charging; raise it to {timeout + CLAIM_MARGIN_SECONDS} or more")


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name) or str(default)
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a whole number of 1 or more, got {raw!r}")
    return int(raw)


def enough_time(remaining_ms: int) -> None:
    """Raise WorkInProgress when one more upload's slowest path may not end before the function
    does: a batch (SQS hands up to 10 messages) is then cut short, and the uploads left are
    retried (batchItemFailures) instead of timing out together in the middle of a charge."""
    if remaining_ms / 1000 < upload_path_seconds():
        raise WorkInProgress(f"not started: {remaining_ms / 1000:.1f} s left in this invocation and one "
                             f"upload can take {upload_path_seconds():g} s; it is retried")
