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
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Mapping, Protocol

import boto3  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_dynamo import as_item, as_values, error_code, from_item
    from keyed_events import S3Object, event_epoch
    from keyed_log import log, log_outcome, metrics_document, read_logged, reason_of, utc
    from keyed_settings import (DAY as DAY, ConfigError, LostOwnership, NeedsAttention, RecordsFailed,
                                Settings, WorkInProgress, settings_from_env)
else:  # the same files, inside idem (the workbook, and the stack's artifact)
    from .keyed_dynamo import as_item, as_values, error_code, from_item  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_events import S3Object, event_epoch  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_log import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        log, log_outcome, metrics_document, read_logged, reason_of, utc)
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        DAY as DAY, ConfigError, LostOwnership, NeedsAttention, RecordsFailed, Settings, WorkInProgress,
        settings_from_env)

#: The table's sparse global secondary index of ledger lines: partition key `account`, sort
#: key `booked_at`, holding only done records (only a commit writes `account`). template.yaml.
BOOKS_INDEX = "by_account"
#: Who pays for an upload with no customer folder (`order.csv`): a name the books can show.
UNASSIGNED_ACCOUNT = "unassigned"


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)

    def __str__(self) -> str:
        return self.value



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
#: A record's optional attributes, as `Record.from_item` reads them back.
RECORD_FIELDS = ("owner", "lease_until", "expires_at", "result", "source", "created_at")


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
        plain = from_item(item)
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
            self.client.put_item, TableName=self.table, Item=as_item(mine.to_plain()),
            # Free, expired, or held by a lease that ran out: take it in the same write. Expiry
            # is checked here, in the condition: DynamoDB deletes expired items days late.
            # (A finished record has no expires_at: the comparison is false, it stays.)
            ConditionExpression=("attribute_not_exists(pk) OR expires_at <= :now"
                                 " OR (#s = :in_progress AND lease_until <= :now)"),
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues=as_values(now=now, in_progress=Status.IN_PROGRESS.value),
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
        if _refused(self.client.update_item, TableName=self.table, Key=as_item({"pk": key}),
                    UpdateExpression="SET #s = :status, #r = :result REMOVE expires_at",
                    ConditionExpression="#o = :me AND #s = :in_progress",  # the same fence as commit
                    ExpressionAttributeNames={"#s": "status", "#r": "result", "#o": "owner"},
                    ExpressionAttributeValues=as_values(status=status.value, result=result, me=owner,
                                                      in_progress=Status.IN_PROGRESS.value)) is not None:
            raise LostOwnership(f"{key} belongs to another invocation now")

    def release(self, key: str, owner: str) -> None:
        """End our lease now, so that Lambda's retry can take over at once instead of meeting
        a live lease until our deadline (up to 15 minutes). Only the owner may release (when
        the write is refused, someone else holds the upload now, which is fine)."""
        _refused(self.client.update_item, TableName=self.table, Key=as_item({"pk": key}),
                 UpdateExpression="SET lease_until = :now", ConditionExpression="#o = :me AND #s = :in_progress",
                 ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                 ExpressionAttributeValues=as_values(now=self.now(), me=owner, in_progress=Status.IN_PROGRESS.value))

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
        line = as_item({**claimed.to_plain(), "status": Status.DONE.value, "expires_at": None, "result": result,
                      "account": account, "cents": cents, "charge_id": charge_id, "booked_at": self.now()})
        old = _refused(
            self.client.put_item, TableName=self.table, Item=line,
            ConditionExpression="#o = :me AND #s = :in_progress",  # the fence: only the owner
            ExpressionAttributeNames={"#s": "status", "#o": "owner"},
            ExpressionAttributeValues=as_values(me=claimed.owner, in_progress=Status.IN_PROGRESS.value),
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
            ExpressionAttributeValues=as_values(account=account))
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
            raise WorkInProgress(f"{upload.source} is being worked on until {utc(existing.lease_until)}; failing, "
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
                result = {"status": "declined", "reason": reason_of(error)}
                self.ledger.finish(key, owner, Status.DECLINED, result)
                return result
            if status in (400, 404, 500):  # saved for this key: every retry with it gets the same
                reason = (f"the provider answered {status} for key {key[:32]}... ({reason_of(error)}); it replays that "
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
    batch = read_logged(event, request_id)  # raises EventError if it is no S3 notification at all
    counts: Counter[str] = Counter()
    processed, failures = [], []
    for obj in batch.objects:
        upload = Upload.of(obj)
        try:
            result = _charger.charge_once(upload, context.get_remaining_time_in_millis())
        except Exception as error:  # one bad upload must not cost the others their turn
            counts[log_outcome(request_id, upload, error)] += 1
            failures.append(error)
            continue
        counts[log_outcome(request_id, upload, result)] += 1
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
    # Imported here: only a function that charges through Stripe needs it (and the `stripe` package).
    if COPIED:
        from keyed_stripe import StripeProvider
    else:
        from .keyed_stripe import StripeProvider  # type: ignore[import-not-found, no-redef, unused-ignore]

    # STRIPE_API_BASE aims the client at another Stripe (the workbook's loopback one); unset: Stripe's.
    provider: PaymentProvider = StripeProvider.from_secret(secret, os.environ.get("STRIPE_API_BASE") or None)
    return provider


# -- DynamoDB: one conditional write ------------------------------------------------------------------
def _refused(write: Callable[..., Any], **request: Any) -> dict[str, Any] | None:
    """Make one conditional write: None when it went through; when its condition failed, the
    item that refused it (with ReturnValuesOnConditionCheckFailure=ALL_OLD), or {} when there
    is none. Any other error is raised."""
    try:
        write(**request)
    except ClientError as error:
        if error_code(error) != "ConditionalCheckFailedException":
            raise
        return dict(error.response.get("Item") or {})
    return None
