"""The settings of the handler to copy (keyed.py), read once per container and checked at cold start,
its exceptions, and its DynamoDB record (`Record`, its `Status`, one conditional write)."""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, fields
from decimal import Decimal
from enum import Enum
from typing import Any, Callable, Mapping

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer  # type: ignore[import-untyped, unused-ignore]
from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

DAY = 24 * 60 * 60

# -- every call bounded, so that the slowest path of one upload fits in the function's timeout -----
#: Each AWS client: these timeouts, two attempts in all (`total_max_attempts`; `max_attempts` counts retries), one
#: backoff of at most 1 s (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html; `bounded`).
#: botocore's defaults (60 s connect, 60 s read) could spend the whole timeout on one hung call.
AWS_CONNECT_SECONDS, AWS_READ_SECONDS, AWS_MAX_ATTEMPTS = 0.5, 0.75, 2
PROVIDER_CALL_SECONDS = 4.0  # keyed_stripe.py: 1 s connect, 3 s read, no retry inside the call
#: The longest one AWS call can take: every attempt timing out, and the backoffs between.
AWS_CALL_SECONDS = AWS_MAX_ATTEMPTS * (AWS_CONNECT_SECONDS + AWS_READ_SECONDS) + sum(
    2.0 ** n for n in range(AWS_MAX_ATTEMPTS - 1))
#: The slowest path of an invocation's first upload: the secret (cold start), the order file, the claim,
#: the customer mapping, the commit (5 AWS calls); the look-up, the saved method and the charge at Stripe.
SLOWEST_PATH_SECONDS = 5 * AWS_CALL_SECONDS + 3 * PROVIDER_CALL_SECONDS
UPLOAD_PATH_SECONDS = SLOWEST_PATH_SECONDS - AWS_CALL_SECONDS  # a batch's later upload: no secret to read


def aws_config() -> Any:
    return Config(connect_timeout=AWS_CONNECT_SECONDS, read_timeout=AWS_READ_SECONDS,
                  retries={"mode": "standard", "total_max_attempts": AWS_MAX_ATTEMPTS})


def bounded(client: Any) -> Any:
    """`client`, deaf to `x-amz-retry-after`, which botocore 1.44 waits out up to 5 s past its 1 s backoff
    (retries/standard.py, ExponentialBackoff.delay_amount): AWS_CALL_SECONDS holds; a longer throttle fails."""
    client.meta.events.register_first(f"needs-retry.{client.meta.service_model.service_id.hyphenize()}",
                                      _no_asked_delay, unique_id="keyed-retry-after")
    return client


def _no_asked_delay(response: Any = None, **_: Any) -> None:  # before botocore's retry handler; None: it decides
    if response and response[0] is not None:
        response[0].headers.pop("x-amz-retry-after", None)


def enough_time(remaining_ms: int) -> None:
    """WorkInProgress when one more upload may not end before the function does (it is retried)."""
    if remaining_ms / 1000 < UPLOAD_PATH_SECONDS:
        raise WorkInProgress(f"not started: {remaining_ms / 1000:.1f} s left in this invocation and one "
                             f"upload can take {UPLOAD_PATH_SECONDS:g} s; it is retried")


#: ORDER_IDENTITY, what makes one order: order-id (default: the file names it; a retried PUT is the
#: same order). object-name and upload read no order file: keyed_event_shapes.py holds them.
ORDER_IDENTITIES = ("order-id", "object-name", "upload")
#: The events that create an order (CHARGE_EVENTS): a PUT, a POST and a completed multipart upload
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html),
#: with EventBridge's reasons (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html:
#: "POST Object"; "PostObject" kept too). Never a copy: it makes a new version of an order charged.
CHARGE_EVENTS = ("ObjectCreated:Put", "ObjectCreated:Post", "ObjectCreated:CompleteMultipartUpload",
                 "ObjectCreated:PutObject", "ObjectCreated:POST Object", "ObjectCreated:PostObject")
#: From 1 h before the key window ends, the charge is searched for before any charge: Stripe's search
#: "can be up to an hour behind during outages" (https://docs.stripe.com/api/payment_intents/search).
KEY_AGE_MARGIN_SECONDS = 3600
#: Amounts are in each currency's minor unit (https://docs.stripe.com/currencies#zero-decimal): one pair of
#: limits bounds only currencies of as many decimals. A three-decimal amount must end in 0 (the same page).
ZERO_DECIMAL = tuple("bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf".split())
THREE_DECIMAL = ("bhd", "jod", "kwd", "omr", "tnd")


@functools.cache
def optional_file() -> Any:
    """keyed_event_shapes.py (what a reader may drop: shapes and modes the stack never uses), or None."""
    name = f"{__package__}.keyed_event_shapes" if __package__ else "keyed_event_shapes"
    try:  # inside idem, where mypy of the copied folder cannot follow a relative `from . import`
        return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name == name:
            return None
        raise  # the file is there, and needs something missing: say so


class IdemError(Exception):
    """The root of every exception this handler (and the rest of idem) raises on purpose."""


class ConfigError(IdemError):
    """A setting is missing or wrong: the function refuses to start rather than charge wrongly."""


class WorkInProgress(IdemError):
    """Another invocation holds a live lease on this upload: fail, and let Lambda retry later."""


class LostOwnership(IdemError):
    """A commit was refused: the lease ran out and the upload is no longer ours to finish."""


class NeedsAttention(IdemError):
    """No retry can finish it: a person must look. `again`: parked before (counted once)."""

    def __init__(self, *args: object, again: bool = False) -> None:
        super().__init__(*args)
        self.again = again


class ProviderAuthFailed(IdemError):
    """Stripe refused the secret key (401): read again on the retry, counted; never parked."""


class RecordsFailed(IdemError):
    """Some records of the event failed or were unreadable; the rest were processed."""


@dataclass(frozen=True)
class Settings:
    """The money settings and the lifetimes (docs/money_contract.md, section 2)."""

    table: str
    currencies: tuple[str, ...] = ("usd",)  # CURRENCIES, lower case
    # MIN_AMOUNT_CENTS, Stripe's USD minimum (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts),
    # and MAX_AMOUNT_CENTS: one order's bounds
    min_amount_cents: int = 50
    max_amount_cents: int = 100_000
    price_per_upload_cents: int | None = None  # PRICE_PER_UPLOAD_CENTS: only where no order file is read
    # No record TTL: a record of keyed's carries no expires_at, so DynamoDB's TTL never deletes one
    # (docs/money_contract.md); RECORD_TTL_SECONDS is the teaching patterns' (idem/core/settings.py).
    provider_key_retention_seconds: int = DAY  # Stripe may prune a key 24 h old
    max_event_age_seconds: int | None = None  # the function's MaximumEventAgeInSeconds, when set
    function_timeout_seconds: int | None = None  # the function's Timeout, when set
    order_identity: str = "order-id"  # one of ORDER_IDENTITIES
    charge_events: tuple[str, ...] = CHARGE_EVENTS

    def __post_init__(self) -> None:
        if self.order_identity != "order-id":  # object-name, upload: keyed_event_shapes.py reads and checks them
            if self.order_identity not in ORDER_IDENTITIES or optional_file() is None:
                raise ConfigError(f"ORDER_IDENTITY is {self.order_identity!r}: set order-id, or object-name or upload "
                                  "with keyed_event_shapes.py copied beside keyed.py")
            optional_file().check_settings(self)  # PRICE_PER_UPLOAD_CENTS
        if not self.currencies or not all(len(c) == 3 and c.isascii() and c.isalpha() and c.islower()
                                          for c in self.currencies):  # ISO 4217 codes: a-z only, as Stripe takes them
            raise ConfigError(f"CURRENCIES is {','.join(self.currencies)!r}: name ISO codes in lower case, e.g. usd,eur")
        decimals = {c: 0 if c in ZERO_DECIMAL else 3 if c in THREE_DECIMAL else 2 for c in self.currencies}
        if len(set(decimals.values())) > 1:  # usd,jpy: MAX 100000 would be $1,000 and ¥100,000
            raise ConfigError(f"CURRENCIES mixes minor units ({', '.join(f'{c}: {d}' for c, d in decimals.items())} "
                              "decimals): one MIN/MAX_AMOUNT_CENTS cannot bound them all; run one function per kind")
        if not 1 <= self.min_amount_cents <= self.max_amount_cents:
            raise ConfigError(f"MIN_AMOUNT_CENTS ({self.min_amount_cents}) must be 1 or more and at most "
                              f"MAX_AMOUNT_CENTS ({self.max_amount_cents})")
        if not self.charge_events or not all(n.startswith("ObjectCreated:") for n in self.charge_events):
            raise ConfigError(f"CHARGE_EVENTS is {','.join(self.charge_events)!r}: name S3's ObjectCreated "
                              "events that create an order, e.g. ObjectCreated:Put,ObjectCreated:Post")
        check_lifetimes(self.provider_key_retention_seconds, self.max_event_age_seconds)
        if self.function_timeout_seconds is not None and SLOWEST_PATH_SECONDS >= self.function_timeout_seconds:
            raise ConfigError(f"FUNCTION_TIMEOUT_SECONDS is {self.function_timeout_seconds} s, and one upload's "
                              f"slowest path can take {SLOWEST_PATH_SECONDS:g} s: raise the timeout")

    @property
    def currency(self) -> str:
        """The currency of an order that names none: the only one allowed (else the order must name it)."""
        return self.currencies[0] if len(self.currencies) == 1 else ""


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
    currencies = tuple(c.strip().lower() for c in (env.get("CURRENCIES") or "usd").split(",") if c.strip())
    events = tuple(n.strip() for n in (env.get("CHARGE_EVENTS") or ",".join(CHARGE_EVENTS)).split(",") if n.strip())
    # RECORD_TTL_SECONDS is not read: keyed's records carry no expires_at (see Settings)
    return Settings(table, currencies, _whole(env, "MIN_AMOUNT_CENTS", 50), _whole(env, "MAX_AMOUNT_CENTS", 100_000),
                    optional["PRICE_PER_UPLOAD_CENTS"], _whole(env, "PROVIDER_KEY_RETENTION_SECONDS", DAY),
                    optional["MAX_EVENT_AGE_SECONDS"], optional["FUNCTION_TIMEOUT_SECONDS"],
                    env.get("ORDER_IDENTITY") or "order-id", events)


def check_lifetimes(key_retention: int, max_event_age: int | None) -> None:
    """The rule every lifetime obeys: a copy of an event is turned away, or looked up (docs/money_contract.md).
    keyed's records never expire, so the one lifetime that can run out first is the provider's memory of a key."""
    if max_event_age is not None and not 60 <= max_event_age <= 21_600:
        raise ConfigError(f"MAX_EVENT_AGE_SECONDS is {max_event_age}; Lambda allows 60 to 21600")
    check_outlasts("PROVIDER_KEY_RETENTION_SECONDS", key_retention, max_event_age, "the provider has forgotten its key")


def check_outlasts(name: str, value: int, max_event_age: int | None, gone: str) -> None:
    """Refuse a lifetime `name` shorter than the maximum event age: a copy of the event may come after `gone`."""
    if max_event_age is not None and value < max_event_age:
        raise ConfigError(f"{name} is {value} s, shorter than MAX_EVENT_AGE_SECONDS ({max_event_age} s): "
                          f"Lambda may still retry or re-deliver an event after {gone}, and charge it again; "
                          f"raise {name} to {max_event_age} or more, or lower the maximum event age")


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name) or str(default)
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:  # str.isdigit alone takes '²' and '１００'
        raise ConfigError(f"{name} must be a whole number of 1 or more, got {raw!r}")
    return int(raw)


# -- DynamoDB: the record of one order, typed values, one conditional write -----------------------------
_SERIALIZE, _DESERIALIZE = TypeSerializer(), TypeDeserializer()


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item as DynamoDB returns it, as plain values (whole numbers as int)."""
    return {name: _converted(_DESERIALIZE.deserialize(value), Decimal) for name, value in item.items()}


def as_item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _SERIALIZE.serialize(_converted(value, float)) for name, value in values.items() if value is not None}


def as_values(**named: Any) -> dict[str, Any]:
    return {f":{name}": _SERIALIZE.serialize(_converted(value, float)) for name, value in named.items()}


def _converted(value: Any, kind: type) -> Any:
    """A float as a Decimal (for DynamoDB), or a Decimal as an int or float (from it), in nested maps too."""
    if isinstance(value, dict):
        return {k: _converted(v, kind) for k, v in value.items()}
    if isinstance(value, float) and kind is float:
        return Decimal(repr(value))
    if isinstance(value, Decimal) and kind is Decimal:
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def error_code(error: Any) -> str:  # of a botocore ClientError
    return str(error.response.get("Error", {}).get("Code", ""))


def conditional_write(write: Callable[..., Any], **request: Any) -> dict[str, Any] | None:
    """None when the write went through; when its condition failed, the item that refused it, or {}."""
    try:
        write(**request)
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":
            raise
        return dict(error.response.get("Item") or {})
    return None


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)
    PENDING = "pending"  # the provider took the charge but has not settled it (Stripe: processing)
    RELEASED = "released"  # a person found no charge and released it (`idem settle`): the next claim takes it

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Record:
    """One order's record; what each field keeps through a takeover: docs/money_contract.md, section 1."""

    key: str
    status: Status
    owner: str = ""
    lease_until: float = 0.0
    expires_at: float = 0.0
    result: Any = None
    source: str = ""
    created_at: float = 0.0
    first_attempt_at: float = 0.0
    payment_method: str = ""
    customer: str = ""  # on a ledger line: who paid, in what currency, how much
    currency: str = ""
    cents: int = 0
    metadata: Any = None
    unsent: bool | None = None  # no charge sent under its key (False: one was; None: not known); never put

    def to_plain(self, **but: Any) -> dict[str, Any]:
        """The record's attributes as stored (none that is empty, but `result`), with `but` instead."""
        return {"pk": self.key, "status": self.status.value, "result": self.result,
                **{f.name: getattr(self, f.name) or None for f in fields(self)[2:] if f.name != "result"}, **but}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Record:
        plain = from_item(item)
        return cls(plain["pk"], Status(plain.get("status", Status.CLAIMED.value)),
                   **{f.name: plain[f.name] for f in fields(cls)[2:] if f.name in plain})


@dataclass(frozen=True)
class Claim:
    """The answer to every claim: won (with the record it wrote), or lost to the record holding the key."""

    won: bool
    existing: Record | None = None
    mine: Record | None = None  # on a win: the claim as it is stored, which the commit replaces


def ours(item: Mapping[str, Any], owner: str, status: Status) -> bool:
    """The record that refused a fenced write is that very write, made already (re-sent)."""
    record = Record.from_item(item)
    return record.owner == owner and record.status is status
