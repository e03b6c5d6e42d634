"""The keyed scribe: charge a customer once per upload, however often S3 and Lambda repeat it.

This is the handler to copy. It is one file with the standard library and boto3, and it is
the code the workbook's exhaustive schedules and `idem check` prove. Paste it into your
function, then:
- replace `make_provider()` with your payment provider's client; its `charge` must accept
  an idempotency key (Stripe's API does: the `Idempotency-Key` header);
- create the table from template.yaml (`LedgerTable`: partition key `pk`, TTL on `expires_at`,
  and the `by_account` index of ledger lines);
- set LEDGER_TABLE, and if you like PRICE_CENTS, CURRENCY and RECORD_TTL_SECONDS.

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
   replaces the claim with the ledger line for the charge (`done`, account, amount, charge id). A done
   record never expires, so every charge is booked once. A zombie whose lease ran out cannot
   commit over the new owner. Account totals are a query on a sparse index (`totals`).

What the provider answers decides what happens next (its rules are Stripe's, API v1: the
first answer for a key is saved, errors included, and replayed; keys are pruned after 24 h):
- 402, declined: a final answer. The record becomes `declined`; no retry, no failure queue.
- 500: saved for the key, so no retry with this key can succeed, and a new key could charge
  twice. The record becomes `needs_attention` and the event goes on failing into the
  failure queue, with the reason, for a person.
- 409 (someone holds the key), or any error this code catches: the lease is released (only
  by its owner), so Lambda's retry a minute later can take over, and the error is raised.
- A copy of the event older than the provider's key window (a redrive from the failure queue
  a day later) is not charged blindly: the charge is looked up by the upload first.
And at cold start the lifetimes are checked against one rule (`check_lifetimes`).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Callable, Mapping, Protocol
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


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)

    def __str__(self) -> str:
        return self.value


# -- settings, read once per container ------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    table: str
    price_cents: int = 500
    currency: str = "usd"
    record_ttl_seconds: int = DAY  # how long an unfinished record lives (a done one: for ever)
    # How long the provider keeps a used key (Stripe: it may prune keys 24 h old).
    provider_key_retention_seconds: int = DAY
    # How long Lambda keeps retrying an event (the function's MaximumEventAgeInSeconds, 60 to
    # 21,600): set it, and the lifetimes are checked against it at cold start.
    max_event_age_seconds: int | None = None

    def __post_init__(self) -> None:
        if self.max_event_age_seconds is not None:
            check_lifetimes(self.record_ttl_seconds, self.provider_key_retention_seconds,
                            self.max_event_age_seconds)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Settings":
        table = env.get("LEDGER_TABLE", "")
        if not table:
            raise ConfigError("LEDGER_TABLE is not set: name the DynamoDB table of idempotency records")
        return cls(table, _whole(env, "PRICE_CENTS", 500), (env.get("CURRENCY") or "usd").lower(),
                   _whole(env, "RECORD_TTL_SECONDS", DAY),
                   _whole(env, "PROVIDER_KEY_RETENTION_SECONDS", DAY),
                   _whole(env, "MAX_EVENT_AGE_SECONDS", 1) if env.get("MAX_EVENT_AGE_SECONDS") else None)


def check_lifetimes(record_ttl: int, key_retention: int, max_event_age: int) -> None:
    """The rule every lifetime obeys, checked at cold start: as long as Lambda can still
    deliver a copy of an event (its retries and its own duplicates, up to the maximum event
    age), a done record must still turn it away and the provider must still know its key.
    Copies re-sent later from the failure queue are older than both: they are looked up at
    the provider before any charge (`KeyedCharger.charge_once`)."""
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


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name) or str(default)
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name} must be a whole number of 1 or more, got {raw!r}")
    return int(raw)


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


def uploads_in(event: Any) -> tuple[list[Upload], list[str]]:
    """The uploads an S3 notification carries, and why each other record was skipped."""
    uploads, skipped = [], []
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list):
        return [], ["not an S3 notification (no Records list); S3 sends one s3:TestEvent when "
                    "notifications are set up, which is expected"]
    for n, record in enumerate(records):
        try:
            name = str(record["eventName"])
            if not name.startswith("ObjectCreated:"):
                skipped.append(f"record {n}: {name} is not an upload")
                continue
            s3 = record["s3"]
            key = unquote_plus(str(s3["object"]["key"]))
            if not key or (key.endswith("/") and int(s3["object"].get("size") or 0) == 0):
                skipped.append(f"record {n}: {key!r} is a folder marker, not an upload")
                continue
            uploads.append(Upload(str(s3["bucket"]["name"]), key, s3["object"].get("versionId"),
                                  str(s3["object"].get("eTag", "")), str(s3["object"].get("sequencer", "")),
                                  event_epoch(record.get("eventTime"))))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            skipped.append(f"record {n}: malformed ({type(error).__name__}: {error})")
    return uploads, skipped


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

    def expired(self, now: float) -> bool:
        """Expiry is checked here, in code: DynamoDB's TTL deletes items days late."""
        return bool(self.expires_at) and self.expires_at <= now

    def lease_live(self, now: float) -> bool:
        return self.status is Status.IN_PROGRESS and self.lease_until > now

    def to_plain(self) -> dict[str, Any]:
        """The record's attributes as stored (none that is empty)."""
        return {"pk": self.key, "status": self.status.value, "owner": self.owner or None,
                "lease_until": self.lease_until or None, "expires_at": self.expires_at or None,
                "result": self.result, "source": self.source or None, "created_at": self.created_at or None}

    def to_item(self) -> dict[str, Any]:
        return _item(self.to_plain())

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> "Record":
        plain = {name: _plain(_DESERIALIZE.deserialize(value)) for name, value in item.items()}
        return cls(key=plain["pk"], status=Status(plain.get("status", Status.CLAIMED.value)),
                   owner=plain.get("owner", ""), lease_until=plain.get("lease_until", 0),
                   expires_at=plain.get("expires_at", 0), result=plain.get("result"),
                   source=plain.get("source", ""), created_at=plain.get("created_at", 0))


@dataclass(frozen=True)
class Claim:
    """The answer to every claim: won (with the record it wrote), or lost to the record that
    holds the key."""

    won: bool
    existing: Record | None = None
    mine: Record | None = None  # on a win: the claim as it is stored, which the commit replaces


class KeyedLedger:
    """The idempotency records and the books, in one DynamoDB table."""

    def __init__(self, client: Any, table: str, ttl_seconds: int = DAY,
                 now: Callable[[], float] = time.time) -> None:
        self.client, self.table, self.ttl_seconds, self.now = client, table, ttl_seconds, now

    def claim(self, key: str, owner: str, lease_until: float, source: str = "") -> Claim:
        """Claim the upload in one call, or learn who holds it (a duplicate costs one call)."""
        now = self.now()
        mine = Record(key, Status.IN_PROGRESS, owner, lease_until, int(now) + self.ttl_seconds,
                      source=source, created_at=now)
        try:
            self.client.put_item(
                TableName=self.table, Item=mine.to_item(),
                # Free, expired, or held by a lease that ran out: take it in the same write.
                ConditionExpression=("attribute_not_exists(pk) OR expires_at <= :now"
                                     " OR (#s = :in_progress AND lease_until <= :now)"),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=_values(now=now, in_progress=Status.IN_PROGRESS.value),
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            old = error.response.get("Item")
            if _code(error) == "ConditionalCheckFailedException" and old:
                existing = Record.from_item(old)
                if existing.owner == owner and existing.status is Status.IN_PROGRESS:
                    return Claim(won=True, mine=existing)  # our own put, re-sent after its answer was lost
                return Claim(won=False, existing=existing)
            raise
        return Claim(won=True, mine=mine)

    def finish(self, key: str, owner: str, status: Status, result: dict[str, Any]) -> None:
        """End the record without a charge (`declined`, `needs_attention`), if we still own it."""
        try:
            self.client.update_item(
                TableName=self.table, Key=_item({"pk": key}),
                UpdateExpression="SET #s = :status, #r = :result",
                ConditionExpression="#o = :me AND #s = :in_progress",  # the same fence as commit
                ExpressionAttributeNames={"#s": "status", "#r": "result", "#o": "owner"},
                ExpressionAttributeValues=_values(status=status.value, result=result, me=owner,
                                                  in_progress=Status.IN_PROGRESS.value))
        except ClientError as error:
            if _code(error) == "ConditionalCheckFailedException":
                raise LostOwnership(f"{key} belongs to another invocation now") from None
            raise

    def release(self, key: str, owner: str) -> None:
        """End our lease now, so that Lambda's retry can take over at once instead of meeting
        a live lease until our deadline (up to 15 minutes). Only the owner may release."""
        try:
            self.client.update_item(
                TableName=self.table, Key=_item({"pk": key}),
                UpdateExpression="SET lease_until = :now",
                ConditionExpression="#o = :me AND #s = :in_progress",
                ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                ExpressionAttributeValues=_values(now=self.now(), me=owner,
                                                  in_progress=Status.IN_PROGRESS.value))
        except ClientError as error:
            if _code(error) != "ConditionalCheckFailedException":
                raise  # (a lost ownership is fine: someone else holds it now)

    def commit(self, claimed: Record, result: dict[str, Any], account: str, cents: int,
               charge_id: str) -> None:
        """Replace our claim with the ledger line for the charge, in one write, if we still own it.

        One conditional put, fenced to the owner: the record becomes `done` with its result
        and carries the booking itself (account, cents, charge id). It has no `expires_at`, so
        DynamoDB's TTL never deletes it: a copy of the event weeks later still finds it and is
        turned away, and each charge is booked once (one record per key, one charge per key
        at the provider). The line enters the sparse index `by_account` (only done lines have
        an `account`), where `totals` reads it. Raises LostOwnership for a zombie.

        Why not a transaction of the record, a booked-once entry and a totals counter? It
        bills every item twice: 6 write units against this write's 1 and the index's 1.
        """
        line = {**claimed.to_plain(), "status": Status.DONE.value, "expires_at": None, "result": result,
                "account": account, "cents": cents, "charge_id": charge_id, "booked_at": self.now()}
        try:
            self.client.put_item(
                TableName=self.table, Item=_item(line),
                ConditionExpression="#o = :me AND #s = :in_progress",  # the fence: only the owner
                ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                ExpressionAttributeValues=_values(me=claimed.owner, in_progress=Status.IN_PROGRESS.value))
        except ClientError as error:
            if _code(error) == "ConditionalCheckFailedException":
                raise LostOwnership(f"{claimed.key} belongs to another invocation now") from None
            raise

    def totals(self, account: str) -> tuple[int, int]:
        """(charges, cents) booked for an account: a query on the sparse index of done lines.
        The index is eventually consistent: a commit of the last second may not show yet."""
        charges = cents = 0
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table, IndexName=BOOKS_INDEX, KeyConditionExpression="account = :account",
            ExpressionAttributeValues=_values(account=account))
        for page in pages:
            charges += len(page["Items"])
            cents += sum(int(item["cents"]["N"]) for item in page["Items"])
        return charges, cents


# -- the handler ---------------------------------------------------------------------------------
class PaymentProvider(Protocol):
    """What the handler needs of a payment provider (Stripe-shaped)."""

    def charge(self, *, customer: str, amount: int, currency: str, reference: str,
               idempotency_key: str | None = None) -> Any:
        """Move `amount` (in the currency's smallest unit); the same key replays the first charge.
        Returns an object with the charge's `id`."""


def make_provider() -> PaymentProvider:
    """Your payment provider's client: replace this with yours. The workbook's local runtime
    and `idem check` replace this function with their provider stand-in, which keeps Stripe's
    idempotency rules; deployed as it is, the function refuses to charge."""
    raise ConfigError("make_provider() builds no payment client yet: replace it with your "
                      "provider's (its charge must take an idempotency key)")


class KeyedCharger:
    """One container's wiring: the ledger, the provider and the settings, built once."""

    def __init__(self, dynamodb: Any, provider: PaymentProvider, settings: Settings,
                 now: Callable[[], float] = time.time,
                 new_owner: Callable[[], str] = lambda: uuid.uuid4().hex) -> None:
        self.ledger = KeyedLedger(dynamodb, settings.table, settings.record_ttl_seconds, now)
        self.provider, self.settings, self.now, self.new_owner = provider, settings, now, new_owner

    def charge_once(self, upload: Upload, remaining_ms: int) -> dict[str, Any]:
        """Claim, charge with the same key, commit: the three steps for one upload."""
        key, owner = upload.idempotency_key, self.new_owner()
        lease_until = self.now() + remaining_ms / 1000  # the lease ends when this invocation must
        claim = self.ledger.claim(key, owner, lease_until, upload.source)
        if not claim.won:
            existing = claim.existing
            if existing.status is Status.DONE:
                return {**(existing.result or {}), "status": "duplicate"}
            if existing.status is Status.DECLINED:  # the provider's final answer, kept
                return {**(existing.result or {}), "status": "declined"}
            if existing.status is Status.NEEDS_ATTENTION:  # fail again: the event reaches the queue
                raise NeedsAttention(f"{upload.source}: {(existing.result or {}).get('reason', '')}")
            until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(existing.lease_until))
            raise WorkInProgress(f"{upload.source} is being worked on until {until}; failing, so that "
                                 "a retry of this event, if Lambda has one left, finds it finished")
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
        key, owner, cents = claimed.key, claimed.owner, self.settings.price_cents
        age = self.now() - upload.event_time if upload.event_time else None
        if age is None or age >= self.settings.provider_key_retention_seconds:
            # A copy older than the provider's key window (a redrive from the failure queue,
            # a day later): the key may be pruned, so the same key would charge anew. Ask the
            # provider what it charged for this upload first.
            found = self._look_up(upload, key, owner, age)
            if found is not None:
                return self._commit(upload, claimed, found, status="found")
        try:
            charge = self.provider.charge(customer=upload.account, amount=cents,
                                          currency=self.settings.currency, reference=upload.reference,
                                          idempotency_key=key)
        except Exception as error:
            status = getattr(error, "http_status", None)  # as Stripe's SDK errors carry it
            if status == 402:  # declined: a final answer, not a failure to retry
                result = {"status": "declined", "reason": str(error)}
                self.ledger.finish(key, owner, Status.DECLINED, result)
                return result
            if status == 500:  # saved for this key: every retry with it gets the same 500
                reason = (f"the provider answered 500 for key {key[:32]}...; it replays that answer "
                          "to every retry with this key, and a new key could charge twice: "
                          "find the charge at the provider (by the reference), then book or refund it")
                self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, {"reason": reason})
                raise NeedsAttention(f"{upload.source}: {reason}") from error
            raise  # 409 (someone holds the key), or anything transient: release, and retry later
        return self._commit(upload, claimed, charge.id)

    def _look_up(self, upload: Upload, key: str, owner: str, age: float | None) -> str | None:
        """The id of the charge already made for this upload, or None if there is none."""
        find = getattr(self.provider, "find_charges", None)
        if find is None:  # this provider offers no lookup: hold the event for a person
            reason = (f"the event is {'of unknown age' if age is None else f'{age / 3600:.1f} h old'}, "
                      "past the provider's key window, and the provider offers no lookup: "
                      "check whether it was charged, then re-send it or close it")
            self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, {"reason": reason})
            raise NeedsAttention(f"{upload.source}: {reason}")
        mine = [c for c in find(upload.reference) if getattr(c, "idempotency_key", key) == key]
        return mine[0].id if mine else None

    def _commit(self, upload: Upload, claimed: Record, charge_id: str,
                status: str = "charged") -> dict[str, Any]:
        cents = self.settings.price_cents
        result = {"status": status, "charge_id": charge_id, "amount_cents": cents}
        try:
            self.ledger.commit(claimed, result, upload.account, cents, charge_id)
        except LostOwnership:
            # Our lease ran out and another invocation took over. The provider key made our
            # charge and theirs the same charge; theirs commits it.
            return {**result, "status": "superseded"}
        return result


_charger: KeyedCharger | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. Every upload is charged once; one failure fails the invocation after
    the others have had their turn (they are recognised as duplicates on the retry)."""
    global _charger
    if _charger is None:  # a cold start: read the settings and build the clients once
        _charger = KeyedCharger(boto3.client("dynamodb"), make_provider(), Settings.from_env(os.environ))
    uploads, skipped = uploads_in(event)
    for reason in skipped:
        print(json.dumps({"level": "info", "message": f"skipped {reason}"}))
    processed, failures = [], []
    for upload in uploads:
        try:
            processed.append({"object": upload.reference,
                              **_charger.charge_once(upload, context.get_remaining_time_in_millis())})
        except Exception as error:  # one bad upload must not cost the others their turn
            print(json.dumps({"level": "error", "message": f"{upload.reference} failed: "
                                                          f"{type(error).__name__}: {error}"}))
            failures.append(error)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise RuntimeError(f"{len(failures)} of {len(uploads)} uploads failed; see the log lines above")
    return {"status": "ok", "processed": processed}


# -- DynamoDB's typed values ------------------------------------------------------------------------
_SERIALIZE, _DESERIALIZE = TypeSerializer(), TypeDeserializer()


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
    return error.response.get("Error", {}).get("Code", "")


class _SystemClock:
    def now(self) -> float:
        return time.time()
