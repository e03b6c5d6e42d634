"""Which order an upload is, for the handler to copy (keyed.py): its file, read at this upload's exact version,
names it (`{"order_id": "A-1001", "amount_cents": 1250, "currency": "usd"}`); who pays, and on what terms.
Anything else is held for a person (NeedsAttention), never charged (docs/money_contract.md, section 2)."""
from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from typing import Any, Mapping

from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import S3Object, event_epoch
    from keyed_settings import THREE_DECIMAL, NeedsAttention, Settings, error_code, optional_file
else:
    from .keyed_events import S3Object, event_epoch  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        THREE_DECIMAL, NeedsAttention, Settings, error_code, optional_file)

ORDER_MAX_BYTES = 1_000_000  # the largest order file read; a bigger one is held, not parsed
#: Order ids go into Stripe's metadata (values up to 500 characters, https://docs.stripe.com/api/metadata).
MAX_ORDER_ID_CHARS = 200
ORDER_FIELDS = ("order_id", "amount_cents", "currency", "customer", "payment_method")


@dataclass(frozen=True)
class Order:
    """What an order file says: its id and amount; the rest is None when absent."""

    order_id: str
    amount_cents: int
    currency: str | None = None
    customer: str | None = None  # the provider's customer id (Stripe: cus_...)
    payment_method: str | None = None  # a saved payment method of that customer (Stripe: pm_...)


@dataclass(frozen=True)
class Upload:
    """What one S3 ObjectCreated record says about one upload."""

    bucket: str
    key: str  # decoded: S3 sends keys URL-encoded
    version_id: str | None
    etag: str
    sequencer: str
    event_time: float = 0.0  # when S3 saw the upload (the record's eventTime); 0: unknown

    @classmethod
    def of(cls, obj: S3Object) -> Upload:  # a record read by `read_event`
        return cls(obj.bucket, obj.key, obj.version_id, obj.etag, obj.sequencer, event_epoch(obj.event_time))

    @property
    def versioned(self) -> bool:
        return bool(self.version_id) and self.version_id != "null"

    @property
    def source(self) -> str:
        """What an upload's key is made from: its version id; unversioned, its eTag and sequencer."""
        made_of = str(self.version_id) if self.versioned else f"{self.etag}#{self.sequencer}"
        return f"{self.bucket}/{self.key}#{made_of}"

    @property
    def idempotency_key(self) -> str:
        """This upload's key, the same on every copy and retry of its event."""
        return _order_key("version" if self.versioned else "content", self.source)

    @property
    def account(self) -> str:
        """Who pays: the object's top-level folder (`alice/order.csv` is alice's); none ("": parked) without one."""
        folder, slash, _ = self.key.partition("/")
        return folder if slash and folder.strip() else ""

    @property
    def reference(self) -> str:
        """What the money was for, as the provider stores it."""
        return f"s3://{self.bucket}/{self.key}" + (f"?versionId={self.version_id}" if self.version_id else "")


@dataclass(frozen=True)
class OrderRef:
    """Which order an upload is: its key, what the key is made from, and what the charge is for."""

    idempotency_key: str
    source: str
    charge_reference: str  # the same on every upload of the order: the provider compares it per key
    upload: Upload
    order: Order | None = None
    problem: NeedsAttention | None = None  # the file names no order: it is keyed by its upload, held

    @property
    def account(self) -> str:
        return self.upload.account

    @property
    def reference(self) -> str:  # the exact upload, for log lines
        return self.upload.reference

    @property
    def metadata(self) -> dict[str, str]:
        """What Stripe is told the charge is for: never the version id (Stripe compares it per key)."""
        return {"order_id": self.order.order_id if self.order else self.source,
                "bucket": self.upload.bucket, "key": self.upload.key, "idem_account": self.account}


def sent_as(ref: OrderRef, kept: Mapping[str, str] | None) -> tuple[str, dict[str, str]]:
    """The charge's reference and metadata: the first claim's, `kept` in its record, else this upload's."""
    if not kept:
        return ref.charge_reference, ref.metadata
    return f"s3://{kept['bucket']}/{kept['key']}", dict(kept)


def identify(upload: Upload, identity: str, s3: Any) -> OrderRef:
    """The order an upload names; when it names none, the upload itself, with the problem."""
    if identity != "order-id":  # object-name, upload: modes the stack never uses (keyed_event_shapes.py)
        return optional_file().identify(upload, identity)  # type: ignore[no-any-return]
    try:
        order = read_order(upload, s3)
    except NeedsAttention as problem:
        return OrderRef(upload.idempotency_key, upload.source, upload.reference, upload, problem=problem)
    return OrderRef(order_key(upload.account, order.order_id),
                    f"{upload.account}#order#{order.order_id}", f"s3://{upload.bucket}/{upload.key}", upload, order)


def order_key(account: str, order_id: str) -> str:
    """An account's order's key: two accounts' order "1001" are two orders (the reconciliation uses it too)."""
    return _order_key("order", f"{account}\n{order_id}")


def _order_key(recipe: str, source: str) -> str:
    return f"charge#{recipe}#{hashlib.sha256(source.encode('utf-8')).hexdigest()}"


def read_exact(upload: Upload, s3: Any) -> bytes:
    """The bytes of this very upload (never a later one at its name), at most ORDER_MAX_BYTES + 1."""
    if not upload.versioned and not upload.etag:  # nothing tells this upload's bytes from a later one's
        raise NeedsAttention(f"the order {upload.reference} has no version id and no eTag: this very upload "
                             "cannot be read (a later one may have replaced it); nothing was charged")
    where = {"VersionId": upload.version_id} if upload.versioned else {"IfMatch": '"' + upload.etag.strip('"') + '"'}
    try:  # the role needs s3:GetObject and s3:GetObjectVersion
        body: bytes = s3.get_object(Bucket=upload.bucket, Key=upload.key, **where)["Body"].read(ORDER_MAX_BYTES + 1)
    except ClientError as error:
        if error_code(error) in ("NoSuchKey", "NoSuchVersion", "PreconditionFailed", "412"):
            raise NeedsAttention(f"the order {upload.reference} is gone or was overwritten "
                                 f"({error_code(error)}): it cannot be read; nothing was charged") from None
        raise
    return body


def one_of_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose names are unique: RFC 8259 section 4 leaves a repeated one to each reader."""
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            raise ValueError(f"it names {name[:60]!r} twice (which one counts would depend on who reads it)")
        seen.add(name)
    return dict(pairs)


def read_order(upload: Upload, s3: Any) -> Order:
    """The order this upload names; NeedsAttention, with the reason, when the file names none."""
    body = read_exact(upload, s3)
    try:
        if len(body) > ORDER_MAX_BYTES:
            raise ValueError(f"the file is over {ORDER_MAX_BYTES:,} bytes")
        data = json.loads(body.decode("utf-8"), object_pairs_hook=one_of_each)
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        unknown = sorted(set(data) - set(ORDER_FIELDS))
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r} (an order file holds only {', '.join(ORDER_FIELDS)})")
        order_id = data.get("order_id")
        if not isinstance(order_id, str) or not order_id.strip():
            raise ValueError("it names no order_id (a non-empty string)")
        if order_id != unicodedata.normalize("NFC", order_id.strip()):  # https://unicode.org/reports/tr15/
            raise ValueError("its order_id has a space at an end or is not in Unicode NFC: write it as "
                             f"{unicodedata.normalize('NFC', order_id.strip())[:60]!r}")  # (any Unicode space)
        if len(order_id) > MAX_ORDER_ID_CHARS or not order_id.isprintable() or any(c in order_id for c in "'\\\""):
            raise ValueError(f"its order_id is over {MAX_ORDER_ID_CHARS} characters, or holds a quote, a backslash, "
                             "or a character that does not print (a control, a format mark, a space not ' ')")
        amount = data.get("amount_cents")
        if amount is None:
            raise ValueError("it names no amount_cents (required: there is no default price)")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise ValueError("its amount_cents is not a whole number above zero")
        currency = data.get("currency")
        if currency is not None and (not isinstance(currency, str) or len(currency) != 3 or not currency.isalpha()):
            raise ValueError("its currency is not a three-letter ISO code")
        ids = {name: data.get(name) for name in ("customer", "payment_method")}
        if any(v is not None and (not isinstance(v, str) or not v.isprintable() or len(v) > 255) for v in ids.values()):
            raise ValueError("its customer or payment_method is not an id")
    except (ValueError, UnicodeDecodeError, RecursionError) as problem:
        raise NeedsAttention(f"the order file {upload.reference} names no order this function can charge "
                             f"({str(problem)[:160]}): fix it and upload it again; nothing was charged") from None
    return Order(order_id, amount, currency.lower() if currency else None, ids["customer"], ids["payment_method"])


def terms_of(ref: OrderRef, cents: int, settings: Settings) -> str:
    """The order's currency, once amount and currency are within the settings; else NeedsAttention."""
    currency = (ref.order.currency if ref.order else None) or settings.currency
    allowed = ",".join(settings.currencies)
    problem = ("names no currency, and CURRENCIES allows several" if not currency
               else f"asks {currency}, not in CURRENCIES ({allowed})" if currency not in settings.currencies
               else f"asks {cents}, below MIN_AMOUNT_CENTS ({settings.min_amount_cents})"
               if cents < settings.min_amount_cents
               else f"asks {cents}, above MAX_AMOUNT_CENTS ({settings.max_amount_cents})"
               if cents > settings.max_amount_cents
               else f"asks {cents}, and Stripe takes {currency} only in tens"
               if currency in THREE_DECIMAL and cents % 10 else "")
    if problem:
        raise NeedsAttention(f"{ref.source}: the order {problem} ({allowed}); fix it and upload it again, "
                             "or change the setting; nothing was charged")
    return currency


def who_pays(linked: str | None, ref: OrderRef) -> str:
    """The account's linked customer; NeedsAttention when it has none or the file names another."""
    account = ref.account
    if not account:  # no folder a person could link, not even one named `unassigned`
        raise NeedsAttention(f"{ref.source}: the key {ref.upload.key[:60]!r} has no account folder: upload it "
                             "as ACCOUNT/NAME (the folder of its account); nothing was charged")
    if linked is None:
        raise NeedsAttention(f"{ref.source}: account {account} has no linked customer: run idem customers "
                             f"link {account} cus_... --reason TEXT, then re-send it; nothing was charged")
    named = ref.order.customer if ref.order else None
    if named and named != linked:
        raise NeedsAttention(f"{ref.source}: the file names customer {named[:60]}, and account {account} is "
                             f"linked to {linked}: a file never chooses who pays; nothing was charged")
    return linked


def check_same_order(ref: OrderRef, stored: tuple[Any, str, str], settings: Settings) -> None:
    """A duplicate must ask what was charged (`stored`: amount, currency, customer); else NeedsAttention."""
    order = ref.order
    if order is None:
        return
    if not (order.currency or settings.currency):  # a file that could not be charged is not a duplicate
        raise NeedsAttention(f"{ref.source}: the order names no currency, and CURRENCIES allows several "
                             f"({','.join(settings.currencies)}); fix it and upload it again; nothing was charged")
    same_terms(ref.source, "", stored,
               (order.amount_cents, order.currency or settings.currency, order.customer or stored[2]))


def the_charge_found(found: list[Any], asked: tuple[int, str, str], source: str) -> Any | None:
    """The one charge the look-up found, if on the terms asked (amount, currency, customer), or None; else
    NeedsAttention: at most one charge per order, booked as Stripe charged it (docs/money_contract.md, 1)."""
    if len(found) > 1:
        ids = ", ".join(str(c.id) for c in found)
        raise NeedsAttention(f"{source}: {len(found)} charges were made with its key ({ids}): refund all but one "
                             "(`idem refund`), then book the one kept (`idem settle`)")
    for made in found:
        same_terms(source, f"{made.id}, made with its key, ",
                   (int(made.amount), getattr(made, "currency", ""), getattr(made, "customer", "")), asked)
    return found[0] if found else None


def same_terms(source: str, charge: str, charged: tuple[Any, ...], asked: tuple[Any, ...]) -> None:
    """NeedsAttention when an order asks other terms (amount, currency, customer) than it was charged on."""
    if any(was and wanted and was != wanted for was, wanted in zip(charged, asked)):
        raise NeedsAttention(f"{source}: {charge}charged {charged[0]} already ({charged[1]}, customer {charged[2]}), "
                             f"and this upload asks {asked[0]} ({asked[1]}, customer {asked[2]}): refund or charge "
                             "the difference by hand (`idem settle`), then close it")
