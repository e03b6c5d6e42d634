"""The keyed scribe: charge a customer once per upload, however often S3 and Lambda repeat it.

This is the handler to copy. It is one file that imports only the standard library and boto3
(and `keyed_stripe.py`, its Stripe adapter, when STRIPE_SECRET_PARAMETER is set), and it is
the code the workbook's exhaustive schedules and `idem check` prove. Copy it (and
`keyed_stripe.py`, if you charge through Stripe) into your function's folder, then:
- create the table from template.yaml (`LedgerTable`: partition key `pk`, TTL on `expires_at`,
  and the `by_account` index of ledger lines);
- set LEDGER_TABLE; for Stripe, STRIPE_SECRET_PARAMETER (the name of an SSM SecureString
  holding your secret key, read once at cold start, never logged); if you like PRICE_CENTS,
  CURRENCY, RECORD_TTL_SECONDS, MAX_EVENT_AGE_SECONDS and FUNCTION_TIMEOUT_SECONDS;
- replace `amount_for(upload)` if the price is not one fixed amount (an example below reads
  the order file itself), or `make_provider()` for another payment provider.

How the two files fit: `make_provider()` imports `keyed_stripe` by its plain module name, only
when it builds a Stripe client, so the adapter never imports this file (no circle, no package,
no relative import: both files run from any folder). A function that does not charge through
Stripe needs neither the adapter nor the `stripe` package.

Each upload goes through three steps:
1. Claim. One conditional put writes an `in_progress` record with a lease that ends at this
   invocation's deadline. If the put fails, DynamoDB returns the record in the same call
   (ReturnValuesOnConditionCheckFailure): `done` means a duplicate, so return the stored
   result; a live lease means another invocation is at work, so raise and let Lambda retry.
   An expired record or an expired lease is taken over by the put itself.
2. Charge, with the claim's key as the provider's idempotency key. If an earlier attempt
   charged and died before its commit, the provider replays that charge instead of making a
   second one: the only thing that closes the gap between the charge and the commit.
3. Commit, in one write, only if this invocation still owns the claim: a conditional put
   replaces the claim with the ledger line for the charge (`done`, account, amount, charge id).
   A done record never expires, so every charge is booked once. A zombie whose lease ran out
   cannot commit over the new owner. If the claim is gone altogether (DynamoDB's TTL swept
   it during a slow provider call), the charge is booked all the same, by a put that only
   succeeds where no record is: a charge is never left without its ledger line in silence.

What the provider answers decides what happens next (its rules are Stripe's, API v1: the
first answer for a key is saved, errors included, and replayed; keys are pruned after 24 h):
- 402, declined: a final answer. The record becomes `declined`; no retry, no failure queue.
- 500, or 400/404 (a reused key with other parameters, an invalid request): saved for the
  key, so no retry with it can succeed, and a new key could charge twice. The record
  becomes `needs_attention` and the event goes on failing into the failure queue, for a person.
- 409 (someone holds the key), 429, 503, a lost connection, or any other error: the lease is
  released (only by its owner), so Lambda's retry a minute later can take over; the error is raised.
- A copy of the event older than the provider's key window (a redrive from the failure queue
  a day later), or one whose age cannot be trusted (no eventTime, or one in the future), is
  not charged blindly: the charge is looked up by the exact upload first.
`declined` and `needs_attention` records never expire: a redrive a week later meets them and
does not try the card again. At cold start the lifetimes are checked against one rule
(`check_lifetimes`). Each upload logs one JSON line (request id, key, account, outcome) and
each invocation prints one CloudWatch Embedded Metric Format document counting the outcomes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Callable, Iterator, Mapping, Protocol
from urllib.parse import unquote_plus

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

DAY = 24 * 60 * 60
#: The table's sparse global secondary index of ledger lines: partition key `account`, sort
#: key `booked_at`, holding only done records (only a commit writes `account`). template.yaml.
BOOKS_INDEX = "by_account"
#: Who pays for an upload with no customer folder (`order.csv`): a name the books can show.
UNASSIGNED_ACCOUNT = "unassigned"

log = logging.getLogger("keyed")


class IdemError(Exception):
    """The root of every exception this handler (and the rest of idem) raises on purpose."""


class ConfigError(IdemError):
    """A setting is missing or wrong: the function refuses to start rather than charge wrongly."""


class WorkInProgress(IdemError):
    """Another invocation holds a live lease on this upload: fail, and let Lambda retry later."""


class LostOwnership(IdemError):
    """A commit was refused: the lease ran out and the upload is no longer ours to finish."""


class NeedsAttention(IdemError):
    """No retry can finish this upload safely: a person must look (the message says why)."""


class RecordsFailed(IdemError):
    """Some records of the event failed or were unreadable; the rest were processed and will
    be recognised as duplicates when Lambda retries (and, at last, the failure queue gets it)."""


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)

    def __str__(self) -> str:
        return self.value


# -- settings, read once per container (from the environment: `settings_from_env`, below) ----------
@dataclass(frozen=True)
class Settings:
    table: str
    price_cents: int = 500
    currency: str = "usd"
    record_ttl_seconds: int = DAY  # how long an unfinished record lives (a finished one: for ever)
    # How long the provider keeps a used key (Stripe: it may prune keys 24 h old).
    provider_key_retention_seconds: int = DAY
    # How long Lambda keeps retrying an event (the function's MaximumEventAgeInSeconds, 60 to
    # 21,600): set it, and the lifetimes are checked against it at cold start.
    max_event_age_seconds: int | None = None
    # The function's Timeout (Lambda does not tell the code): set it, and a claim is known
    # to outlive the longest invocation.
    function_timeout_seconds: int | None = None

    def __post_init__(self) -> None:  # the rule below; with neither age nor timeout set, nothing to check
        check_lifetimes(self.record_ttl_seconds, self.provider_key_retention_seconds,
                        self.max_event_age_seconds, self.function_timeout_seconds)


# -- one upload -----------------------------------------------------------------------------------
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
    def of(cls, obj: S3Object) -> Upload:
        """The upload a record read by `read_event` announces."""
        return cls(obj.bucket, obj.key, obj.version_id, obj.etag, obj.sequencer, event_epoch(obj.event_time))

    @property
    def versioned(self) -> bool:
        return bool(self.version_id) and self.version_id != "null"

    @property
    def source(self) -> str:
        """What the key is made from, readable. With versioning on, the version id tells every
        upload apart. Without it, two uploads of one name share the version `null`, so the
        eTag and the sequencer (which grows with every event for a key) tell them apart."""
        if self.versioned:
            return f"{self.bucket}/{self.key}#{self.version_id}"
        return f"{self.bucket}/{self.key}#{self.etag}#{self.sequencer}"

    @property
    def idempotency_key(self) -> str:
        """A name for this upload's charge, the same on every copy and retry of its event,
        and a fixed 80-odd bytes (DynamoDB allows 2,048 in a partition key)."""
        recipe = "version" if self.versioned else "content"
        return f"charge#{recipe}#{hashlib.sha256(self.source.encode('utf-8')).hexdigest()}"

    @property
    def account(self) -> str:
        """Who pays: the object's top-level folder (`alice/order.csv` is alice's)."""
        folder, slash, _ = self.key.partition("/")
        return folder if slash and folder.strip() else UNASSIGNED_ACCOUNT

    @property
    def reference(self) -> str:
        """What the money was for, as the provider stores it."""
        return f"s3://{self.bucket}/{self.key}" + (f"?versionId={self.version_id}" if self.version_id else "")


# -- the record: claim, then commit -----------------------------------------------------------------
@dataclass(frozen=True)
class Record:
    key: str
    status: Status
    owner: str = ""
    lease_until: float = 0.0
    expires_at: float = 0.0
    result: Any = None
    source: str = ""
    created_at: float = 0.0

    def to_plain(self) -> dict[str, Any]:
        """The record's attributes as stored (none that is empty)."""
        return {"pk": self.key, "status": self.status.value, "owner": self.owner or None,
                "lease_until": self.lease_until or None, "expires_at": self.expires_at or None,
                "result": self.result, "source": self.source or None, "created_at": self.created_at or None}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Record:
        plain = {name: _plain(_DESERIALIZE.deserialize(value)) for name, value in item.items()}
        return cls(plain["pk"], Status(plain.get("status", Status.CLAIMED.value)),
                   **{name: plain[name] for name in RECORD_FIELDS if name in plain})


@dataclass(frozen=True)
class Claim:
    """The answer to every claim: won (with the record it wrote), or lost to the record that
    holds the key."""

    won: bool
    existing: Record | None = None
    mine: Record | None = None  # on a win: the claim as it is stored, which the commit replaces


class KeyedLedger:
    """The idempotency records and the books, in one DynamoDB table. Each write is conditional:
    `_refused` (below) makes it and returns None when it went through, else the record that
    refused it ({} when there is none)."""

    def __init__(self, client: Any, table: str, ttl_seconds: int = DAY,
                 now: Callable[[], float] = time.time) -> None:
        self.client, self.table, self.ttl_seconds, self.now = client, table, ttl_seconds, now

    def claim(self, key: str, owner: str, lease_until: float, source: str = "") -> Claim:
        """Claim the upload in one call, or learn who holds it (a duplicate costs one call)."""
        now = self.now()
        mine = Record(key, Status.IN_PROGRESS, owner, lease_until, int(now) + self.ttl_seconds,
                      source=source, created_at=now)
        old = _refused(
            self.client.put_item, TableName=self.table, Item=_item(mine.to_plain()),
            # Free, expired, or held by a lease that ran out: take it in the same write. Expiry
            # is checked here, in the condition: DynamoDB deletes expired items days late.
            # (A finished record has no expires_at: the comparison is false, it stays.)
            ConditionExpression=("attribute_not_exists(pk) OR expires_at <= :now"
                                 " OR (#s = :in_progress AND lease_until <= :now)"),
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=_values(now=now, in_progress=Status.IN_PROGRESS.value),
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old is None:
            return Claim(won=True, mine=mine)
        existing = Record.from_item(old)
        if existing.owner == owner and existing.status is Status.IN_PROGRESS:
            return Claim(won=True, mine=existing)  # our own put, re-sent after its answer was lost
        return Claim(won=False, existing=existing)

    def finish(self, key: str, owner: str, status: Status, result: dict[str, Any]) -> None:
        """End the record without a charge (`declined`, `needs_attention`), if we still own it.
        It loses its expires_at: such a record is an answer (or a person's to-do), kept for ever."""
        if _refused(self.client.update_item, TableName=self.table, Key=_item({"pk": key}),
                    UpdateExpression="SET #s = :status, #r = :result REMOVE expires_at",
                    ConditionExpression="#o = :me AND #s = :in_progress",  # the same fence as commit
                    ExpressionAttributeNames={"#s": "status", "#r": "result", "#o": "owner"},
                    ExpressionAttributeValues=_values(status=status.value, result=result, me=owner,
                                                      in_progress=Status.IN_PROGRESS.value)) is not None:
            raise LostOwnership(f"{key} belongs to another invocation now")

    def release(self, key: str, owner: str) -> None:
        """End our lease now, so that Lambda's retry can take over at once instead of meeting
        a live lease until our deadline (up to 15 minutes). Only the owner may release (when
        the write is refused, someone else holds the upload now, which is fine)."""
        _refused(self.client.update_item, TableName=self.table, Key=_item({"pk": key}),
                 UpdateExpression="SET lease_until = :now", ConditionExpression="#o = :me AND #s = :in_progress",
                 ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                 ExpressionAttributeValues=_values(now=self.now(), me=owner, in_progress=Status.IN_PROGRESS.value))

    def commit(self, claimed: Record, result: dict[str, Any], account: str, cents: int,
               charge_id: str) -> None:
        """Replace our claim with the ledger line for the charge, in one write, if we still own it.

        One conditional put, fenced to the owner: the record becomes `done` with its result
        and carries the booking itself (account, cents, charge id). It has no `expires_at`, so
        DynamoDB's TTL never deletes it: a copy of the event weeks later still finds it and is
        turned away, and each charge is booked once (one record per key, one charge per key
        at the provider). The line enters the sparse index `by_account` (only done lines have
        an `account`), where `totals` reads it. Raises LostOwnership for a zombie.
        If the claim is gone (swept by TTL), the line is written where no record is.

        Why not a transaction of the record, a booked-once entry and a totals counter? It
        bills every item twice: 6 write units against this write's 1 and the index's 1.
        """
        line = _item({**claimed.to_plain(), "status": Status.DONE.value, "expires_at": None, "result": result,
                      "account": account, "cents": cents, "charge_id": charge_id, "booked_at": self.now()})
        old = _refused(
            self.client.put_item, TableName=self.table, Item=line,
            ConditionExpression="#o = :me AND #s = :in_progress",  # the fence: only the owner
            ExpressionAttributeNames={"#s": "status", "#o": "owner"},
            ExpressionAttributeValues=_values(me=claimed.owner, in_progress=Status.IN_PROGRESS.value),
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old:
            raise LostOwnership(f"{claimed.key} belongs to another invocation now")
        if old is not None:  # no record at all: our claim expired and was deleted as we charged; book it anyway
            if _refused(self.client.put_item, TableName=self.table, Item=line,
                        ConditionExpression="attribute_not_exists(pk)") is not None:
                raise LostOwnership(f"{claimed.key}: our claim was swept and another invocation holds it now")
            log.warning("our claim expired and was deleted during the charge; booked it anyway",
                        extra={"idempotency_key": claimed.key, "at": self.now()})

    def totals(self, account: str) -> tuple[int, int]:
        """(charges, cents) booked for an account: a query on the sparse index of done lines.
        The index is eventually consistent: a commit of the last second may not show yet."""
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table, IndexName=BOOKS_INDEX, KeyConditionExpression="account = :account",
            ExpressionAttributeValues=_values(account=account))
        lines = [item for page in pages for item in page["Items"]]
        return len(lines), sum(int(item["cents"]["N"]) for item in lines)


# -- what to charge --------------------------------------------------------------------------------
def amount_for(upload: Upload, settings: Settings) -> int:
    """How much to charge for an upload, in the currency's smallest unit: replace this.
    The default is the configured price (PRICE_CENTS). `amount_from_order_file` (below)
    reads the amount from the uploaded file itself. Raise NeedsAttention when the amount
    cannot be known: the upload is held for a person, never charged a wrong amount."""
    return settings.price_cents


# -- the handler (who charges: `make_provider`, below) ---------------------------------------------
class KeyedCharger:
    """One container's wiring: the ledger, the provider and the settings, built once."""

    def __init__(self, dynamodb: Any, provider: PaymentProvider, settings: Settings,
                 now: Callable[[], float] = time.time, new_owner: Callable[[], str] = lambda: uuid.uuid4().hex,
                 amount: Callable[[Upload], int] | None = None) -> None:
        self.ledger = KeyedLedger(dynamodb, settings.table, settings.record_ttl_seconds, now)
        self.provider, self.settings, self.now, self.new_owner = provider, settings, now, new_owner
        self.amount = amount or (lambda upload: amount_for(upload, settings))

    def charge_once(self, upload: Upload, remaining_ms: int) -> dict[str, Any]:
        """Claim, charge with the same key, commit: the three steps for one upload."""
        key, owner = upload.idempotency_key, self.new_owner()
        lease_until = self.now() + remaining_ms / 1000  # the lease ends when this invocation must
        claim = self.ledger.claim(key, owner, lease_until, upload.source)
        if not claim.won:
            existing = claim.existing
            assert existing is not None
            if existing.status is Status.DONE:
                return {**(existing.result or {}), "status": "duplicate"}
            if existing.status is Status.DECLINED:  # the provider's final answer, kept
                return {**(existing.result or {}), "status": "declined"}
            if existing.status is Status.NEEDS_ATTENTION:  # fail again: the event reaches the queue
                raise NeedsAttention(f"{upload.source}: {(existing.result or {}).get('reason', '')}")
            raise WorkInProgress(f"{upload.source} is being worked on until {_utc(existing.lease_until)}; failing, "
                                 "so that a retry of this event, if Lambda has one left, finds it finished")
        assert claim.mine is not None
        try:
            return self._charge_and_commit(upload, claim.mine)
        except (NeedsAttention, LostOwnership):
            raise  # the record says why already, or it is not ours any more
        except Exception:
            # Give the upload back at once: Lambda retries in about a minute, and a lease
            # that runs to our deadline (a 900 s timeout) would turn every retry away.
            self.ledger.release(key, owner)
            raise

    def _charge_and_commit(self, upload: Upload, claimed: Record) -> dict[str, Any]:
        key, owner = claimed.key, claimed.owner
        # Past the provider's key window (a redrive a day later), or of an age we cannot trust,
        # the key may be pruned and could charge anew: a charge found is booked at its own amount.
        found = look_up(self, upload, claimed)
        if found is not None:
            return self._commit(upload, claimed, str(found.id), int(found.amount), status="found")
        try:
            cents = self.amount(upload)
        except NeedsAttention as problem:
            self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, {"reason": str(problem)})
            raise
        try:
            charge = self.provider.charge(customer=upload.account, amount=cents,
                                          currency=self.settings.currency, reference=upload.reference,
                                          idempotency_key=key)
        except Exception as error:
            status = getattr(error, "http_status", None)  # as Stripe's SDK errors carry it
            if status == 402:  # declined: a final answer, not a failure to retry
                result = {"status": "declined", "reason": _reason(error)}
                self.ledger.finish(key, owner, Status.DECLINED, result)
                return result
            if status in (400, 404, 500):  # saved for this key: every retry with it gets the same
                reason = (f"the provider answered {status} for key {key[:32]}... ({_reason(error)}); it replays that "
                          "answer to every retry with this key, and a new key could charge twice: find the "
                          "charge at the provider (by the reference), then book or refund it")
                self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, {"reason": reason})
                raise NeedsAttention(f"{upload.source}: {reason}") from error
            raise  # 409 (someone holds the key), 429, 503, no answer: release, and retry later
        return self._commit(upload, claimed, charge.id, cents)

    def _commit(self, upload: Upload, claimed: Record, charge_id: str, cents: int,
                status: str = "charged") -> dict[str, Any]:
        result = {"status": status, "charge_id": charge_id, "amount_cents": cents}
        try:
            self.ledger.commit(claimed, result, upload.account, cents, charge_id)
        except LostOwnership:
            # Our lease ran out and another invocation took over. The provider key made our
            # charge and theirs the same charge; theirs commits it. (Counted: lost_ownership.)
            log.warning("lost ownership before the commit: the new owner books this charge",
                        extra={"idempotency_key": claimed.key, "charge_id": charge_id, "at": self.now()})
            return {**result, "status": "superseded"}
        return result


_charger: KeyedCharger | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. Every upload is charged once. A failed upload, or a record this code
    cannot read, fails the invocation after the others have had their turn (they are
    recognised as duplicates on the retry), so the event reaches the failure queue."""
    global _charger
    if _charger is None:  # a cold start: read the settings and build the clients once
        _charger = KeyedCharger(boto3.client("dynamodb"), make_provider(), settings_from_env(os.environ))
    request_id = str(getattr(context, "aws_request_id", ""))
    batch = _read_logged(event, request_id)  # raises EventError if it is no S3 notification at all
    counts: Counter[str] = Counter()
    processed, failures = [], []
    for obj in batch.objects:
        upload = Upload.of(obj)
        try:
            result = _charger.charge_once(upload, context.get_remaining_time_in_millis())
        except Exception as error:  # one bad upload must not cost the others their turn
            counts[_log_outcome(request_id, upload, error)] += 1
            failures.append(error)
            continue
        counts[_log_outcome(request_id, upload, result)] += 1
        processed.append({"object": upload.reference, **result})
    print(json.dumps(metrics_document(counts, getattr(context, "function_name", "keyed"), time.time())))
    if len(failures) == 1 and not batch.malformed:
        raise failures[0]
    if failures or batch.malformed:
        raise RecordsFailed(f"{len(failures)} upload(s) failed and {len(batch.malformed)} record(s) "
                            f"unreadable of {len(batch.objects) + len(batch.skipped)}; see the log lines")
    return {"status": "test_event" if batch.test_event else "ok", "processed": processed}


# -- past the key window: look the charge up ------------------------------------------------------
def look_up(charger: KeyedCharger, upload: Upload, claimed: Record) -> Any | None:
    """The charge already made for this exact upload (its `id` and the `amount` it took), or
    None: none was made, or the event is young enough for the key itself to replay it.

    A copy of the event older than the provider's key window (a redrive from the failure
    queue a day later), or one whose age cannot be trusted (no eventTime, or one after our
    clock), may meet a pruned key, which would charge anew: the provider is asked first. It
    finds charges by what they were for (Stripe: a search on the metadata this handler sends,
    keyed_stripe.py); only a charge made with this upload's own key counts, and that key is
    made from the version id, or from the eTag and the sequencer when the bucket is not
    versioned: an earlier upload of the same name is never booked as this one."""
    age = charger.now() - upload.event_time
    if upload.event_time and 0 <= age < charger.settings.provider_key_retention_seconds:
        return None  # inside the key window: the key itself replays an earlier charge
    find = getattr(charger.provider, "find_charges", None)
    if find is None:  # this provider offers no lookup: hold the event for a person
        known = "of unknown age" if not upload.event_time or age < 0 else f"{age / 3600:.1f} h old"
        reason = (f"the event is {known}, past the provider's key window or not to be trusted, and the "
                  "provider offers no lookup: check whether it was charged, then re-send it or close it")
        charger.ledger.finish(claimed.key, claimed.owner, Status.NEEDS_ATTENTION, {"reason": reason})
        raise NeedsAttention(f"{upload.source}: {reason}")
    mine = [c for c in find(upload.reference, claimed.key) if getattr(c, "idempotency_key", None) == claimed.key]
    return mine[0] if mine else None


# -- who charges: the payment provider's client, built at cold start ------------------------------
class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (Stripe-shaped; keyed_stripe.py adapts
    Stripe's SDK to it). Errors carry `http_status` as Stripe's do; a lost connection has none."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None) -> Any:
        """Move `amount` (in the currency's smallest unit); the same key replays the first charge.
        Returns an object with the charge's `id`."""


def make_provider() -> PaymentProvider:
    """The payment provider's client, built once per container. With STRIPE_SECRET_PARAMETER
    set, Stripe's (keyed_stripe.py, copied beside this file), with the secret key read from
    SSM Parameter Store; without it the function refuses to start. The workbook's local
    runtime and `idem check` replace this function with their provider (the stand-in that
    keeps Stripe's rules, or Stripe's SDK aimed at a loopback server)."""
    parameter = os.environ.get("STRIPE_SECRET_PARAMETER", "")
    if not parameter:
        raise ConfigError("STRIPE_SECRET_PARAMETER is not set: name the SSM SecureString that holds "
                          "your Stripe secret key, or replace make_provider() with your provider's client")
    secret = boto3.client("ssm").get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    # Imported here: only a function that charges through Stripe needs it. By its plain name when
    # copied beside this file; from the package when this file ships inside idem (the stack's
    # production artifact, built by function/Makefile).
    try:
        from keyed_stripe import StripeProvider  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError as missing:
        if missing.name != "keyed_stripe" or not __package__:
            raise
        from .keyed_stripe import StripeProvider  # type: ignore[no-redef, unused-ignore]

    # STRIPE_API_BASE aims the client at another Stripe (the workbook's loopback one); unset: Stripe's.
    provider: PaymentProvider = StripeProvider.from_secret(secret, os.environ.get("STRIPE_API_BASE") or None)
    return provider


# -- settings from the environment, and the lifetimes rule checked at cold start -------------------
#: How long a claim must outlive the function's timeout: DynamoDB's TTL sweep must never
#: delete a claim while its invocation can still be charging (cold-start rule, below).
CLAIM_MARGIN_SECONDS = 60


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """The settings the function's environment names (template.yaml sets them)."""
    table = env.get("LEDGER_TABLE", "")
    if not table:
        raise ConfigError("LEDGER_TABLE is not set: name the DynamoDB table of idempotency records")
    optional = {name: _whole(env, name, 1) if env.get(name) else None
                for name in ("MAX_EVENT_AGE_SECONDS", "FUNCTION_TIMEOUT_SECONDS")}
    return Settings(table, _whole(env, "PRICE_CENTS", 500), (env.get("CURRENCY") or "usd").lower(),
                    _whole(env, "RECORD_TTL_SECONDS", DAY), _whole(env, "PROVIDER_KEY_RETENTION_SECONDS", DAY),
                    optional["MAX_EVENT_AGE_SECONDS"], optional["FUNCTION_TIMEOUT_SECONDS"])


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


# -- an example amount: the order file itself ---------------------------------------------------
#: The largest order file read (bytes): a bigger one is held for a person, not parsed.
ORDER_MAX_BYTES = 1_000_000


def amount_from_order_file(upload: Upload, s3: Any) -> int:
    """An `amount` that reads the uploaded order: a CSV with an `amount_cents` column, charged
    as the sum of its rows. It reads the exact upload, by its VersionId (or, unversioned,
    only if the eTag still matches, IfMatch), so every retry reads the same bytes. The role
    needs s3:GetObject and s3:GetObjectVersion on the bucket. A malformed order raises
    NeedsAttention (the upload is held for a person), never a charge of a wrong amount."""
    import csv  # only this example parses a file
    import io

    where = ({"VersionId": upload.version_id} if upload.versioned
             else {"IfMatch": '"' + upload.etag.strip('"') + '"'} if upload.etag else {})
    try:
        body = s3.get_object(Bucket=upload.bucket, Key=upload.key, **where)["Body"].read(ORDER_MAX_BYTES + 1)
    except ClientError as error:
        if _code(error) in ("NoSuchKey", "NoSuchVersion", "PreconditionFailed", "412"):
            raise NeedsAttention(f"the order {upload.reference} is gone or was overwritten "
                                 f"({_code(error)}): the amount cannot be known") from None
        raise
    try:
        if len(body) > ORDER_MAX_BYTES:
            raise ValueError(f"the file is over {ORDER_MAX_BYTES:,} bytes")
        rows = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
        if not rows or "amount_cents" not in rows[0]:
            raise ValueError("no rows with an amount_cents column")
        cents = [int(row["amount_cents"] or "x") for row in rows]
        if any(c <= 0 for c in cents):
            raise ValueError("an amount_cents is zero or negative")
    except (ValueError, UnicodeDecodeError, csv.Error) as problem:
        raise NeedsAttention(f"the order {upload.reference} is malformed ({str(problem)[:120]}): "
                             "fix it and upload it again; nothing was charged") from None
    return sum(cents)




# -- what the operator sees: JSON log lines and CloudWatch metrics --------------------------------
#: The namespace of the handler's metrics (CloudWatch Embedded Metric Format).
METRICS_NAMESPACE = "Idem"  # template.yaml alarms on its needs_attention
#: The outcomes an operator counts (one metric each, per invocation; see `metrics_document`).
OUTCOMES = ("charged", "duplicate", "declined", "needs_attention", "work_in_progress",
            "lost_ownership", "failed")
_OUTCOME_OF = {"NeedsAttention": "needs_attention", "WorkInProgress": "work_in_progress",
               "LostOwnership": "lost_ownership"}


def metrics_document(counts: Mapping[str, int], function_name: str, now: float) -> dict[str, Any]:
    """One invocation's outcomes as a CloudWatch Embedded Metric Format document, printed as
    one line: CloudWatch Logs turns it into metrics, with no PutMetricData call (the role
    needs no CloudWatch permission). Spec: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
    (Timestamp in epoch milliseconds; a dimension's value a string; metric values numbers on
    the root). It is printed, not logged: with Lambda's JSON log format a logged line is
    wrapped in another object and would not be read as metrics."""
    return {"_aws": {"Timestamp": int(now * 1000), "CloudWatchMetrics": [{
                "Namespace": METRICS_NAMESPACE, "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": name, "Unit": "Count"} for name in OUTCOMES]}]},
            "FunctionName": str(function_name), **{name: int(counts.get(name, 0)) for name in OUTCOMES}}


class JsonLines(logging.Formatter):
    """One JSON object a line, as Lambda's JSON log format writes them: the time, the level,
    the message and the fields this handler adds (request id, idempotency key, account,
    outcome). Lambda's format: https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html"""

    FIELDS = ("request_id", "idempotency_key", "account", "outcome", "object", "charge_id")

    def format(self, record: logging.LogRecord) -> str:
        # The time is the record's, or `at`, the clock of the code that logged it (the same on
        # Lambda; the workbook's virtual clock when its runtime drives the handler directly).
        line = {"timestamp": _utc(getattr(record, "at", record.created)),
                "level": record.levelname, "message": record.getMessage(), "logger": record.name}
        line.update({name: str(getattr(record, name)) for name in self.FIELDS if getattr(record, name, None)})
        return json.dumps(line, ensure_ascii=False)


class _Stdout(logging.Handler):
    """Writes to whatever sys.stdout is now (Lambda's, or a test's capture)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), flush=True)
        except Exception:  # as logging's own handlers do: a broken log line never stops the work
            self.handleError(record)


if not log.handlers:
    _handler = _Stdout()
    _handler.setFormatter(JsonLines())
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # one line per record, whatever the root logger does


def _log(level: int, message: str, request_id: str, upload: Upload | None = None, outcome: str = "") -> None:
    """One log line. Never a secret, a card detail or an object's body: only names and ids."""
    log.log(level, message, extra={
        "request_id": request_id, "outcome": outcome,
        **({"idempotency_key": upload.idempotency_key, "account": upload.account, "object": upload.reference}
           if upload else {})})


def _read_logged(event: Any, request_id: str) -> EventBatch:
    """`read_event`, with a log line for an event it rejects and for every record it skips."""
    try:
        batch = read_event(event)  # EventError: not an S3 notification at all; Lambda retries it
    except EventError as bad:
        _log(logging.ERROR, f"event rejected: {bad}", request_id)
        raise
    if batch.test_event:
        _log(logging.INFO, "s3:TestEvent ignored (S3 sends one to SNS and SQS destinations when notifications are configured)", request_id)
    elif not batch.objects and not batch.skipped:
        _log(logging.INFO, "the event holds no records: nothing to do", request_id)
    for level, line in batch.log_lines():  # bounded, however many records were skipped
        malformed = level == "error"
        _log(logging.ERROR if malformed else logging.INFO, line, request_id,
             outcome="malformed" if malformed else "skipped")
    return batch


def _log_outcome(request_id: str, upload: Upload, done: dict[str, Any] | BaseException) -> str:
    """Log what became of one upload (its result, or the error it raised); return the
    outcome counted in the metrics (one of OUTCOMES)."""
    if isinstance(done, BaseException):
        outcome = _OUTCOME_OF.get(type(done).__name__, "failed")
        _log(logging.ERROR, f"{type(done).__name__}: {_reason(done)}", request_id, upload, outcome)
        return outcome
    outcome = {"found": "charged", "superseded": "lost_ownership"}.get(done["status"], str(done["status"]))
    _log(logging.INFO, f"{upload.reference}: {done['status']}", request_id, upload, outcome)
    return outcome


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _reason(error: BaseException) -> str:
    """What an error says, cut short (a provider's message, never its request body)."""
    text = str(getattr(error, "user_message", None) or error)
    return text if len(text) <= 300 else text[:300] + "..."


# -- reading S3's events: one parser, failing closed ----------------------------------------------
# The one event parser of idem (idem.core.events re-exports it): every record is either an
# upload, a record that is not ours (logged, skipped), or malformed (logged, and the
# invocation fails after the good ones so the event reaches the failure queue).
SUPPORTED_MAJOR_VERSION = "2"

#: Records read per invocation, counting those inside SNS and SQS messages. S3 sends one
#: record per event; an SQS batch can hold up to 10,000 messages (Lambda's SQS BatchSize
#: maximum, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html).
#: Each upload costs a few DynamoDB and provider calls (tens of milliseconds on AWS), so
#: 500 already fills a good part of the function's 30-second timeout. Records past it are
#: skipped as malformed, with this reason, so the event fails visibly instead of timing out.
MAX_RECORDS = 500
#: "The object key name ... with a maximum length of 1,024 bytes"
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_KEY_BYTES = 1024
#: An S3 object holds at most 10,000 parts of 5 GiB: 48.8 TiB ("Maximum object size 48.8 TiB",
#: https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html; older copies of that page say 5 TiB).
MAX_OBJECT_SIZE = 10_000 * 5 * 1024**3
#: S3's other short strings (eTag, sequencer, version id, time, region) stay far below this.
MAX_FIELD_BYTES = 1024
#: Bucket names: letters, digits, dots, hyphens (and, in old us-east-1 buckets, capitals
#: and underscores, up to 255 characters); never a `/`, which would blur bucket and key.
BUCKET_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
#: How deep `load_event` lets JSON nest. An S3 event nests 5 levels (envelopes carry theirs
#: as text); the local runtime copies events with copy.deepcopy, which recurses.
MAX_NESTING = 100
#: Skipped records logged one by one; the rest are counted in one more line.
MAX_LOGGED_SKIPS = 20
#: Envelope event sources: what they are called in a reason, and where the message is.
ENVELOPES = {"aws:sqs": ("SQS message", "body"), "aws:sns": ("SNS message", "Sns.Message")}


class EventError(IdemError, ValueError):
    """An event (or one record of it) that is not what an S3 notification looks like."""


class _Foreign(Exception):
    """A well-formed envelope whose message is not an S3 event: not ours to handle."""


@dataclass(frozen=True)
class S3Object:
    """One `ObjectCreated` record, decoded: the facts every key recipe is built from."""

    bucket: str
    key: str  # URL-decoded, as the object is named in the bucket
    size: int
    etag: str
    sequencer: str
    version_id: str | None = None  # None when the bucket is not versioned
    event_name: str = "ObjectCreated:Put"
    event_time: str = ""
    region: str = "us-east-1"

    @property
    def uri(self) -> str:
        version = f"?versionId={self.version_id}" if self.version_id else ""
        return f"s3://{self.bucket}/{self.key}{version}"


@dataclass(frozen=True)
class Skipped:
    """A record the function did not process, and why."""

    index: int  # the position in the event's `Records` (of the envelope, when unwrapped)
    reason: str
    malformed: bool  # True: a broken record (an error); False: not ours to handle (a log line)


@dataclass
class EventBatch:
    """What one invocation's event holds."""

    objects: list[S3Object] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    test_event: bool = False

    @property
    def malformed(self) -> list[Skipped]:
        return [s for s in self.skipped if s.malformed]

    def log_lines(self, limit: int = MAX_LOGGED_SKIPS) -> list[tuple[str, str]]:
        """(level, message) per skipped record, at most `limit` of them (malformed ones
        first, in record order), then one line counting the rest."""
        errors = self.malformed[:limit]
        others = [s for s in self.skipped if not s.malformed][:limit - len(errors)]
        chosen = {id(s) for s in errors + others}
        lines = [("error" if s.malformed else "info", f"record {s.index} skipped: {s.reason}")
                 for s in self.skipped if id(s) in chosen]
        rest, bad = len(self.skipped) - len(chosen), len(self.malformed) - len(errors)
        if rest:
            lines.append(("error" if bad else "info",
                          f"{rest} more records skipped ({bad} malformed), not logged one by one"))
        return lines


def is_test_event(event: Any) -> bool:
    return isinstance(event, Mapping) and event.get("Event") == "s3:TestEvent"


def is_eventbridge(event: Any) -> bool:
    """An event EventBridge delivers for S3 (`source: aws.s3`), whatever parts it lacks."""
    return (isinstance(event, Mapping) and event.get("source") == "aws.s3"
            and ("detail" in event or "detail-type" in event))


# -- reading an event --------------------------------------------------------------------
def read_event(event: Any) -> EventBatch:
    """Split an invocation's event into objects to process and records to skip.

    Raises EventError only when the event as a whole is not an S3 notification; a bad
    record inside a good event is reported in `skipped` so the good ones are not lost.
    Reads at most MAX_RECORDS records: the work is bounded whatever the event's size.
    """
    if is_test_event(event):
        return EventBatch(test_event=True)
    if not isinstance(event, Mapping):
        raise EventError(f"expected a JSON object, got {_kind(event)}")
    if is_eventbridge(event):
        return _collect((0, leaf) for leaf in [_eventbridge_leaf(event, 0, "EventBridge: ")])
    records = event.get("Records")
    if records is None:
        keys = ", ".join(sorted(_show(k) for k in list(event)[:20])) or "none"
        raise EventError(
            f"not an S3 notification: no 'Records' list (top-level keys: {keys}); "
            "pass the event S3 delivers to Lambda, e.g. one captured from CloudWatch Logs"
        )
    if not isinstance(records, list):
        raise EventError(f"'Records' must be a list, got {_kind(records)}")
    return _collect((index, leaf) for index, record in enumerate(records)
                    for leaf in _record_leaves(record, index, "", envelopes=True))


def _collect(leaves: Iterator[tuple[int, S3Object | Skipped]]) -> EventBatch:
    """Gather the first MAX_RECORDS leaves; one malformed skip stands for all the rest."""
    batch = EventBatch()
    for count, (index, leaf) in enumerate(leaves):
        if count == MAX_RECORDS:
            batch.skipped.append(Skipped(index, (
                f"over the limit: one invocation reads at most {MAX_RECORDS} records (about what "
                "fits in the function's timeout), so this one and all after it were not read; "
                "send smaller batches (e.g. a smaller SQS BatchSize)"), malformed=True))
            break
        if isinstance(leaf, S3Object):
            batch.objects.append(leaf)
        else:
            batch.skipped.append(leaf)
    return batch


def _record_leaves(record: Any, index: int, where: str, *,
                   envelopes: bool) -> Iterator[S3Object | Skipped]:
    """What one record holds: an object or a skip; for an SNS or SQS envelope, its records."""
    if not isinstance(record, Mapping):
        yield Skipped(index, f"{where}a record must be a JSON object, got {_kind(record)}", True)
        return
    source = record.get("eventSource", record.get("EventSource"))  # SNS spells it EventSource
    if source == "aws:s3":
        yield _s3_leaf(record, index, where)
    elif envelopes and isinstance(source, str) and source in ENVELOPES:
        yield from _envelope_leaves(record, source, index, where)
    else:
        readable = "'aws:s3'" + (", or 'aws:sns' / 'aws:sqs' carrying S3 events" if envelopes else "")
        yield Skipped(index, f"{where}eventSource is {_show(source)}, not {readable}", True)


def _s3_leaf(record: Mapping[str, Any], index: int, where: str) -> S3Object | Skipped:
    """One S3 record: the upload it announces, or why it is skipped."""
    try:
        version = _text(record, "eventVersion", required=True)
        if version.split(".")[0] != SUPPORTED_MAJOR_VERSION:
            raise EventError(f"eventVersion {version!r} is not 2.x, the only version this code reads")
        name = _text(record, "eventName", required=True)
        if not name.startswith("ObjectCreated:"):
            return Skipped(index, f"{where}{name} is not an object creation", False)
        obj = S3Object(
            bucket=_bucket(record, "s3.bucket.name"),
            key=_key(unquote_plus(_text(record, "s3.object.key", required=True,
                                        limit=3 * MAX_KEY_BYTES))),  # %XX triples a byte
            size=_size(record, "s3.object.size", required=True),
            etag=_text(record, "s3.object.eTag"),
            sequencer=_sequencer(record, "s3.object.sequencer"),
            version_id=_version(record, "s3.object.versionId"),
            event_name=name,
            event_time=_text(record, "eventTime"),
            region=_text(record, "awsRegion") or "us-east-1",
        )
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return _unless_folder_marker(obj, index, where)


def _eventbridge_leaf(event: Mapping[str, Any], index: int, where: str) -> S3Object | Skipped:
    """EventBridge's `Object Created` event: the same facts, another shape, key not encoded.

    Shape: https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html (only the
    bucket name and the key are certain to be there; size, etag, version-id and sequencer
    may be absent).
    """
    try:
        kind = _text(event, "detail-type", required=True)
        if kind != "Object Created":
            return Skipped(index, f"{where}{kind!r} ignored (not an object creation)", False)
        if not isinstance(event.get("detail"), Mapping):
            raise EventError(f"detail must be a JSON object, got {_kind(event.get('detail'))}")
        obj = S3Object(
            bucket=_bucket(event, "detail.bucket.name"),
            key=_key(_text(event, "detail.object.key", required=True, limit=MAX_KEY_BYTES)),
            size=_size(event, "detail.object.size", required=False),
            etag=_text(event, "detail.object.etag"),
            sequencer=_sequencer(event, "detail.object.sequencer"),
            version_id=_version(event, "detail.object.version-id"),
            event_name="ObjectCreated:" + (_text(event, "detail.reason") or "PutObject"),
            event_time=_text(event, "time"),
            region=_text(event, "region") or "us-east-1",
        )
    except EventError as problem:
        return Skipped(index, f"{where}{problem}", True)
    return _unless_folder_marker(obj, index, where)


def _unless_folder_marker(obj: S3Object, index: int, where: str) -> S3Object | Skipped:
    """The console's "Create folder" writes a zero-byte object whose key ends in `/`
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-folders.html): not an upload."""
    if obj.key.endswith("/") and obj.size == 0:
        return Skipped(index, f"{where}{obj.key!r} is a folder marker (a zero-byte key ending "
                              "in '/'), not an upload", False)
    return obj


def _envelope_leaves(record: Mapping[str, Any], source: str, index: int,
                     where: str) -> Iterator[S3Object | Skipped]:
    """The S3 records inside an SNS or SQS message; a skip when it holds no S3 event."""
    label, path = ENVELOPES[source]
    where = f"{where}{label}: "
    try:
        message = _json_message(record, path)
        if source == "aws:sqs" and _is_sns_notification(message):  # S3 -> SNS -> SQS
            where += "SNS notification: "
            message = _json_message(message, "Message")
    except EventError as problem:
        yield Skipped(index, f"{where}{problem}", True)
        return
    except _Foreign as problem:
        yield Skipped(index, f"{where}{problem}", False)
        return
    if is_test_event(message):
        yield Skipped(index, f"{where}s3:TestEvent ignored", False)
    elif is_eventbridge(message):
        yield _eventbridge_leaf(message, index, f"{where}EventBridge: ")
    elif not isinstance(message, Mapping) or not isinstance(message.get("Records"), list):
        yield Skipped(index, f"{where}not an S3 event (no 'Records' list), ignored", False)
    elif not message["Records"]:
        yield Skipped(index, f"{where}an S3 event with no records", False)
    else:
        for n, inner in enumerate(message["Records"]):
            yield from _record_leaves(inner, index, f"{where}record {n}: ", envelopes=False)


def _json_message(container: Any, path: str) -> Any:
    """The JSON text at `path`, decoded. EventError when it is not text; _Foreign when the
    text is not JSON (a plain-text message cannot be an S3 event)."""
    text = _text(container, path, required=True, limit=None)
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise _Foreign(f"{path} is not JSON, so not an S3 event; ignored") from None


def _is_sns_notification(message: Any) -> bool:
    """SNS's message as SQS receives it (raw message delivery off): `Type: Notification`."""
    return isinstance(message, Mapping) and message.get("Type") == "Notification" and "Message" in message


# -- reading one field -------------------------------------------------------------------
def _field(container: Any, path: str) -> Any:
    """The value at a dotted path, or None when a part is absent or null.
    EventError when something on the way is not a JSON object."""
    value, walked = container, list[str]()
    for part in path.split("."):
        if not isinstance(value, Mapping):
            raise EventError(f"{'.'.join(walked)} must be a JSON object, got {_kind(value)}")
        value = value.get(part)
        walked.append(part)
        if value is None:
            return None
    return value


def _text(container: Any, path: str, *, required: bool = False,
          limit: int | None = MAX_FIELD_BYTES) -> str:
    """A string field: "" when absent (EventError if required), EventError when not text,
    not valid Unicode, or longer than `limit` bytes of UTF-8."""
    value = _field(container, path)
    if value is None or value == "":
        if required:
            raise EventError(f"{path} is missing, null or empty")
        return ""
    if not isinstance(value, str):
        raise EventError(f"{path} must be a string, got {_kind(value)}")
    size = _utf8_bytes(value, path)
    if limit is not None and size > limit:
        raise EventError(f"{path} is {size:,} bytes long; S3 sends at most {limit:,}")
    return value


def _utf8_bytes(value: str, path: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:  # JSON allows "\ud800", UTF-8 (and S3, and DynamoDB) do not
        raise EventError(f"{path} is not valid Unicode (it holds a lone surrogate)") from None


def _key(key: str) -> str:
    """A decoded object key, checked against S3's own rules."""
    if not key:
        raise EventError("the object key is empty")
    size = _utf8_bytes(key, "the object key")
    if size > MAX_KEY_BYTES:
        raise EventError(f"the object key is {size:,} bytes; S3 keys are at most {MAX_KEY_BYTES:,}")
    return key


def _bucket(container: Any, path: str) -> str:
    name = _text(container, path, required=True, limit=255)
    if not BUCKET_NAME.fullmatch(name):
        raise EventError(f"{path} {_show(name)} is not a bucket name (letters, digits, '.', '-', '_')")
    return name


def _size(container: Any, path: str, *, required: bool) -> int:
    """A size in bytes: a whole number from 0 to MAX_OBJECT_SIZE (0 when absent and not required)."""
    value = _field(container, path)
    if value is None:
        if required:
            raise EventError(f"{path} is missing or null")
        return 0
    if isinstance(value, float) and value.is_integer():  # JSON may write 1024 as 1024.0 or 1.024e3
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise EventError(f"{path} must be a whole number of bytes, got {_describe(value)}")
    if not 0 <= value <= MAX_OBJECT_SIZE:
        raise EventError(f"{path} is {_show(value)}; an S3 object holds 0 bytes to 48.8 TiB")
    return value


def _version(container: Any, path: str) -> str | None:
    """A version id, or None: absent, null and S3's "null" (versioning off or suspended)
    all mean the object has no version."""
    value = _text(container, path)
    return None if value in ("", "null") else value


def _sequencer(container: Any, path: str) -> str:
    """S3's sequencer: hexadecimal digits (compared as a number), or "" when absent."""
    value = _text(container, path, limit=64)
    if value and not all(c in "0123456789abcdefABCDEF" for c in value):
        raise EventError(f"{path} {_show(value)} is not hexadecimal")
    return value


def _kind(value: Any) -> str:
    """A JSON type's name, for messages (never the value: it may be huge or deeply nested)."""
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
                              int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """A short, safe rendering of a scalar for a message: strings cut at 60 characters,
    huge numbers not written out, lists and objects only named."""
    if isinstance(value, str):
        return repr(value[:60] + "..." if len(value) > 60 else value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int) and abs(value) >= 10**30:
        return "a number of more than 30 digits"
    if isinstance(value, (int, float)):
        return repr(value)
    return _kind(value)


def _describe(value: Any) -> str:
    """`a string '1024'`, `a boolean true`, `a list`: what a wrong value was."""
    shown = _show(value)
    return shown if shown in (_kind(value), "null") or shown.startswith("a number of") else f"{_kind(value)} {shown}"


# -- DynamoDB: conditional writes and typed values ---------------------------------------------------
_SERIALIZE, _DESERIALIZE = TypeSerializer(), TypeDeserializer()
#: A record's optional attributes, as `Record.from_item` reads them back.
RECORD_FIELDS = ("owner", "lease_until", "expires_at", "result", "source", "created_at")


def _refused(write: Callable[..., Any], **request: Any) -> dict[str, Any] | None:
    """Make one conditional write: None when it went through; when its condition failed, the
    item that refused it (with ReturnValuesOnConditionCheckFailure=ALL_OLD), or {} when there
    is none. Any other error is raised."""
    try:
        write(**request)
    except ClientError as error:
        if _code(error) != "ConditionalCheckFailedException":
            raise
        return dict(error.response.get("Item") or {})
    return None


def _item(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _SERIALIZE.serialize(_dynamo(value)) for name, value in values.items() if value is not None}


def _values(**named: Any) -> dict[str, Any]:
    return {f":{name}": _SERIALIZE.serialize(_dynamo(value)) for name, value in named.items()}


def _dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def event_epoch(text: Any) -> float:
    """An S3 eventTime (2026-01-01T00:00:00.000Z) in seconds since the epoch; 0.0 if unreadable."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
