"""The keyed scribe: charge a customer once per ORDER, however often S3, Lambda and the uploader repeat it.

This is the handler to copy: the protocol a reader studies (the claim, the charge with the key,
the fenced commit, the handler), with its siblings beside it, imported by their plain names when
copied (`if COPIED:`): keyed_orders.py (which order an upload is: ORDER_IDENTITY), keyed_events.py
(the event parser), keyed_settings.py (settings, lifetimes, bounded clients), keyed_provider.py
(what a provider's answer means; Stripe's client), keyed_log.py, keyed_dynamo.py, and
keyed_stripe.py (Stripe's SDK; a restricted key needs PaymentIntents write and read, Customers
read). Copy the folder's keyed*.py files into your function's folder, create the table from
template.yaml (`LedgerTable`: partition key `pk`, TTL on `expires_at`, the `by_account` index),
set LEDGER_TABLE, STRIPE_SECRET_PARAMETER and STAGE (README.md lists the rest).

Each order goes through three steps:
1. Claim. One conditional put writes an `in_progress` record under the order's key with a lease
   that ends at this invocation's deadline. If the put fails, DynamoDB returns the record in the
   same call: `done` means a duplicate (a retried PUT of the same order), so return the stored
   result; a live lease means another invocation is at work, so raise and let Lambda retry.
2. Charge, with the order's key as the provider's idempotency key. If an earlier attempt
   charged and died before its commit, the provider replays that charge instead of making a
   second one; past the provider's 24 h key window the charge is looked up first, and with no
   answer from the look-up the order is parked for a person, never charged blind.
3. Commit, in one write, only if this invocation still owns the claim (the fence token): the
   claim becomes the ledger line (`done`, account, amount, charge id). A write re-sent after its
   answer was lost finds its own result: a success. A zombie cannot commit over a new owner.

What the provider answers decides what happens next (keyed_provider.meaning_of, by Stripe's
error `type` and `code`): a decline is final (`declined`); a rate limit, a lock, a key in flight
or a lost connection is retried (the lease released); an idempotency_error, a saved 500 or an
invalid request needs a person (`needs_attention`, and the event goes on to the failure queue);
a PaymentIntent in `processing` is `pending`. Each upload logs one JSON line and each
invocation prints one CloudWatch Embedded Metric Format document counting the outcomes.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Mapping

import boto3  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_dynamo import as_item, as_values, error_code, from_item
    from keyed_log import log, log_outcome, metrics_document, read_logged, utc
    from keyed_orders import Order, OrderRef, Upload as Upload, identify
    from keyed_provider import ATTENTION, DECLINED, INTENT_MEANS, PENDING, RETRY, PaymentProvider, make_provider, meaning_of
    from keyed_settings import (DAY as DAY, ConfigError as ConfigError, LostOwnership, NeedsAttention, RecordsFailed,
                                Settings, WorkInProgress, aws_config, settings_from_env, upload_path_seconds)
else:  # the same files, inside idem (the workbook, and the stack's artifact)
    from .keyed_dynamo import as_item, as_values, error_code, from_item  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_log import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        log, log_outcome, metrics_document, read_logged, utc)
    from .keyed_orders import Order, OrderRef, Upload as Upload, identify  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_provider import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ATTENTION, DECLINED, INTENT_MEANS, PENDING, RETRY, PaymentProvider, make_provider, meaning_of)
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        DAY as DAY, ConfigError as ConfigError, LostOwnership, NeedsAttention, RecordsFailed, Settings, WorkInProgress,
        aws_config, settings_from_env, upload_path_seconds)

#: The table's sparse global secondary index of ledger lines: partition key `account`, sort
#: key `booked_at`, holding only done records (only a commit writes `account`). template.yaml.
BOOKS_INDEX = "by_account"


class Status(str, Enum):
    CLAIMED = "claimed"  # claim-first's record (chapter 04): seen, says nothing about the work
    IN_PROGRESS = "in_progress"  # the work started, under a lease
    DONE = "done"  # the work finished: the result is stored
    DECLINED = "declined"  # the provider declined the charge: a final answer, nothing to retry
    NEEDS_ATTENTION = "needs_attention"  # no retry can finish it: a person must (see `result`)
    PENDING = "pending"  # the provider took the charge but has not settled it (Stripe: processing)

    def __str__(self) -> str:
        return self.value



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
        old = _refused(self.client.update_item, TableName=self.table, Key=as_item({"pk": key}),
                       UpdateExpression="SET #s = :status, #r = :result REMOVE expires_at",
                       ConditionExpression="#o = :me AND #s = :in_progress",  # the same fence as commit
                       ExpressionAttributeNames={"#s": "status", "#r": "result", "#o": "owner"},
                       ExpressionAttributeValues=as_values(status=status.value, result=result, me=owner,
                                                           in_progress=Status.IN_PROGRESS.value),
                       ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old is not None and not _ours(old, owner, status):
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
               charge_id: str, status: Status = Status.DONE) -> None:
        """Replace our claim with the ledger line for the charge, in one write, if we still own it.

        One conditional put, fenced to the owner: the record becomes `done` with its result
        and carries the booking itself (account, cents, charge id). It has no `expires_at`, so
        DynamoDB's TTL never deletes it: a copy of the event weeks later still finds it and is
        turned away, and each charge is booked once (one record per key, one charge per key
        at the provider). The line enters the sparse index `by_account` (only done lines have
        an `account`), where `totals` reads it. Raises LostOwnership for a zombie.
        If the claim is gone (swept by TTL), the line is written where no record is. A write
        whose answer was lost and that is re-sent (botocore retries it) finds our own result,
        told by the fence token (the owner): a success. A `pending` charge (not settled yet)
        keeps its charge id but no `account`: it is booked when it settles.

        Why not a transaction of the record, a booked-once entry and a totals counter? It
        bills every item twice: 6 write units against this write's 1 and the index's 1.
        """
        now = self.now()  # booked_day: the reconciliation's by_day index (template.yaml) reads it
        booked = ({"account": account, "booked_at": now, "booked_day": time.strftime("%Y-%m-%d", time.gmtime(now))}
                  if status is Status.DONE else {})
        line = as_item({**claimed.to_plain(), "status": status.value, "expires_at": None, "result": result,
                        "cents": cents, "charge_id": charge_id, **booked})
        old = _refused(
            self.client.put_item, TableName=self.table, Item=line,
            ConditionExpression="#o = :me AND #s = :in_progress",  # the fence: only the owner
            ExpressionAttributeNames={"#s": "status", "#o": "owner"},
            ExpressionAttributeValues=as_values(me=claimed.owner, in_progress=Status.IN_PROGRESS.value),
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old and not _ours(old, claimed.owner, status):
            raise LostOwnership(f"{claimed.key} belongs to another invocation now")
        if old == {}:  # no record at all: our claim expired and was deleted as we charged; book it anyway
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
def amount_for(upload: Upload, settings: Settings, order: Order | None = None) -> int:
    """How much to charge for an upload, in the currency's smallest unit: replace this if you
    price otherwise. The default is the order's `amount_cents`, else the configured price
    (PRICE_CENTS). Raise NeedsAttention when the amount cannot be known: the upload is held
    for a person, never charged a wrong amount."""
    return order.amount_cents if order and order.amount_cents else settings.price_cents


# -- the handler (who charges: `make_provider`, below) ---------------------------------------------
class KeyedCharger:
    """One container's wiring: the ledger, the provider, S3 (to read orders) and the settings."""

    def __init__(self, dynamodb: Any, provider: PaymentProvider, settings: Settings,
                 now: Callable[[], float] = time.time, new_owner: Callable[[], str] = lambda: uuid.uuid4().hex,
                 amount: Callable[[Upload], int] | None = None, s3: Any = None) -> None:
        self.ledger = KeyedLedger(dynamodb, settings.table, settings.record_ttl_seconds, now)
        self.provider, self.settings, self.now, self.new_owner, self.s3 = provider, settings, now, new_owner, s3
        self.amount = amount

    def order_of(self, upload: Upload) -> OrderRef:
        return identify(upload, self.settings.order_identity, self.s3)

    def charge_once(self, upload: Upload, remaining_ms: int, ref: OrderRef | None = None) -> dict[str, Any]:
        """Name the order, claim it, charge with its key, commit: the steps for one upload."""
        ref = ref or self.order_of(upload)
        owner = self.new_owner()
        lease_until = self.now() + remaining_ms / 1000  # the lease ends when this invocation must
        claim = self.ledger.claim(ref.idempotency_key, owner, lease_until, ref.source)
        if not claim.won:
            assert claim.existing is not None
            return self._answered(ref, claim.existing)
        assert claim.mine is not None
        try:
            if ref.problem is not None:  # no order to charge: held for a person, with the reason
                self.ledger.finish(ref.idempotency_key, owner, Status.NEEDS_ATTENTION, {"reason": str(ref.problem)})
                raise ref.problem
            return self._charge_and_commit(upload, ref, claim.mine)
        except (NeedsAttention, LostOwnership):
            raise  # the record says why already, or it is not ours any more
        except Exception:
            # Give the upload back at once: Lambda retries in about a minute, and a lease
            # that runs to our deadline (a 900 s timeout) would turn every retry away.
            self.ledger.release(ref.idempotency_key, owner)
            raise

    def _answered(self, ref: OrderRef, existing: Record) -> dict[str, Any]:
        """What a claim that met a record answers: the stored result, or why not."""
        result = existing.result or {}
        if existing.status is Status.DONE:
            asked = ref.order.amount_cents if ref.order else None
            if asked and asked != result.get("amount_cents"):  # a corrected order: never a second charge
                raise NeedsAttention(f"{ref.source}: charged {result.get('amount_cents')} already, and this "
                                     f"upload of the same order asks {asked}: refund or charge the difference "
                                     "by hand (`idem settle`), then close it")
            return {**result, "status": "duplicate"}
        if existing.status in (Status.DECLINED, Status.PENDING):  # the provider's answer, kept
            return {**result, "status": existing.status.value}
        if existing.status is Status.NEEDS_ATTENTION:  # fail again: the event reaches the queue
            raise NeedsAttention(f"{ref.source}: {result.get('reason', '')}")
        raise WorkInProgress(f"{ref.source} is being worked on until {utc(existing.lease_until)}; failing, "
                             "so that a retry of this event, if Lambda has one left, finds it finished")

    def _charge_and_commit(self, upload: Upload, ref: OrderRef, claimed: Record) -> dict[str, Any]:
        key, owner = claimed.key, claimed.owner
        # Past the provider's key window (a redrive a day later), or of an age we cannot trust,
        # the key may be pruned and could charge anew: a charge found is booked at its own amount.
        found = look_up(self, upload, ref, claimed)
        if found is not None:
            return self._commit(upload, claimed, str(found.id), int(found.amount), status="found")
        try:
            cents = self.amount(upload) if self.amount else amount_for(upload, self.settings, ref.order)
        except NeedsAttention as problem:
            self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, {"reason": str(problem)})
            raise
        try:
            order = ref.order  # who pays: the order's customer (and method), else the account folder
            charge = self.provider.charge(customer=(order and order.customer) or upload.account, amount=cents,
                                          currency=(order and order.currency) or self.settings.currency,
                                          reference=ref.charge_reference, idempotency_key=key, metadata=ref.metadata,
                                          **({"payment_method": order.payment_method} if order and order.payment_method else {}))
        except Exception as error:
            meaning = meaning_of(error)  # by Stripe's error type and code (keyed_provider.py)
            if meaning.what == RETRY:  # rate limit, lock, key in flight, api_error, no answer
                raise  # release the lease (charge_once), and let Lambda retry with the same key
            result = {"status": meaning.what, "code": meaning.code, "decline_code": meaning.decline_code,
                      "reason": meaning.reason}
            if meaning.what == DECLINED:  # a final answer: not a failure to retry
                self.ledger.finish(key, owner, Status.DECLINED, result)
                return result
            result["reason"] = (f"the provider answered {getattr(error, 'http_status', None) or ''} {meaning.code} for "
                                f"key {key[:32]}... ({meaning.reason}); "
                                "no retry with this key can succeed, and a new key could charge twice: find the "
                                "charge at the provider (`idem settle`), then book or refund it")
            self.ledger.finish(key, owner, Status.NEEDS_ATTENTION, result)
            raise NeedsAttention(f"{ref.source}: {result['reason']}") from error
        what = INTENT_MEANS.get(str(getattr(charge, "status", None) or "succeeded"), ATTENTION)
        if what == DECLINED:  # requires_action off-session, or requires_payment_method
            result = {"status": DECLINED, "code": str(charge.status), "charge_id": charge.id}
            self.ledger.finish(key, owner, Status.DECLINED, result)
            return result
        return self._commit(upload, claimed, charge.id, cents, status=what)

    def _commit(self, upload: Upload, claimed: Record, charge_id: str, cents: int,
                status: str = "charged") -> dict[str, Any]:
        result = {"status": status, "charge_id": charge_id, "amount_cents": cents}
        try:  # a pending charge (Stripe: processing) is booked when it settles (`idem settle`)
            self.ledger.commit(claimed, result, upload.account, cents, charge_id,
                               Status.PENDING if status == PENDING else Status.DONE)
        except LostOwnership:
            # Our lease ran out and another invocation took over. The provider key made our
            # charge and theirs the same charge; theirs commits it. (Counted: lost_ownership.)
            log.warning("lost ownership before the commit: the new owner books this charge",
                        extra={"idempotency_key": claimed.key, "charge_id": charge_id, "at": self.now()})
            return {**result, "status": "superseded"}
        return result


_charger: KeyedCharger | None = None


def enough_time(remaining_ms: int) -> None:
    """Raise WorkInProgress when one more upload's slowest path may not end before the function
    does: a batch (SQS hands up to 10 messages) is then cut short, and the uploads left are
    retried (batchItemFailures) instead of timing out together in the middle of a charge."""
    if remaining_ms / 1000 < upload_path_seconds():
        raise WorkInProgress(f"not started: {remaining_ms / 1000:.1f} s left in this invocation and one "
                             f"upload can take {upload_path_seconds():g} s; it is retried")


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls. Every order is charged once. A failed upload, or a record this code
    cannot read, fails the invocation after the others have had their turn (they are
    recognised as duplicates on the retry), so the event reaches the failure queue. From SQS,
    the answer names each failed message instead (`batchItemFailures`: the event source
    mapping needs ReportBatchItemFailures), so that only those come back, then go to the DLQ.
    An upload after the first starts only while its slowest path still fits (`enough_time`)."""
    global _charger
    if _charger is None:  # a cold start: read the settings and build the clients once
        settings = settings_from_env(os.environ)  # every client bounded: keyed_settings.aws_config
        _charger = KeyedCharger(boto3.client("dynamodb", config=aws_config()), make_provider(), settings,
                                s3=boto3.client("s3", config=aws_config()))
    request_id = str(getattr(context, "aws_request_id", ""))
    # raises EventError if it is no S3 notification at all
    batch = read_logged(event, request_id, _charger.settings.charge_events)
    counts: Counter[str] = Counter(ignored=len(batch.skipped) - len(batch.malformed), malformed=len(batch.malformed))
    processed: list[dict[str, Any]] = []
    failures: list[Exception] = []
    failed_at = {s.index for s in batch.malformed}
    for obj, origin in zip(batch.objects, batch.origins):
        upload = Upload.of(obj)
        named: Upload | OrderRef = upload  # what the log line names: the order, once it is read
        try:
            if processed or failures:  # not the first: start it only if its slowest path fits
                enough_time(context.get_remaining_time_in_millis())
            named = ref = _charger.order_of(upload)  # reads the order file (order-id)
            result = _charger.charge_once(upload, context.get_remaining_time_in_millis(), ref)
        except Exception as error:  # one bad upload must not cost the others their turn
            counts[log_outcome(request_id, named, error)] += 1
            failures.append(error)
            failed_at.add(origin)
            continue
        counts[log_outcome(request_id, named, result)] += 1
        processed.append({"object": upload.reference, **result})
    print(json.dumps(metrics_document(counts, getattr(context, "function_name", "keyed"), time.time())))
    records = event.get("Records") if isinstance(event, Mapping) else None
    if records and all(isinstance(r, Mapping) and r.get("eventSource") == "aws:sqs" for r in records):
        return {"batchItemFailures": [{"itemIdentifier": str(records[i].get("messageId", ""))}
                                      for i in sorted(failed_at)]}
    if len(failures) == 1 and not batch.malformed:
        raise failures[0]
    if failures or batch.malformed:
        raise RecordsFailed(f"{len(failures)} upload(s) failed and {len(batch.malformed)} record(s) "
                            f"unreadable of {len(batch.objects) + len(batch.skipped)}; see the log lines")
    return {"status": "test_event" if batch.test_event else "ok", "processed": processed}


# -- past the key window: look the charge up ------------------------------------------------------
def look_up(charger: KeyedCharger, upload: Upload, ref: OrderRef, claimed: Record) -> Any | None:
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
    # Stripe: keys "are eligible to be removed ... after they're at least 24 hours old"
    # (https://docs.stripe.com/api/idempotent_requests): PROVIDER_KEY_RETENTION_SECONDS.
    if upload.event_time and 0 <= age < charger.settings.provider_key_retention_seconds:
        return None  # inside the key window: the key itself replays an earlier charge
    known = "of unknown age" if not upload.event_time or age < 0 else f"{age / 3600:.1f} h old"
    find = getattr(charger.provider, "find_charges", None)
    try:
        if find is None:
            raise LookupError("the provider offers no look-up")
        found = [c for c in find(ref.charge_reference, claimed.key) if getattr(c, "idempotency_key", None) == claimed.key]
    except Exception as unavailable:  # never charge blind: park it for a person
        # A charge is searchable within a minute, "up to an hour behind during outages"
        # (https://docs.stripe.com/api/payment_intents/search); within that hour its key still
        # replays it. Without an answer from the search nothing proves there was no charge.
        reason = (f"the event is {known}, past the provider's key window or not to be trusted, and the "
                  f"look-up failed ({str(unavailable)[:120]}): check whether it was charged (`idem settle`), "
                  "then re-send it or close it")
        charger.ledger.finish(claimed.key, claimed.owner, Status.NEEDS_ATTENTION, {"reason": reason})
        raise NeedsAttention(f"{ref.source}: {reason}") from None
    return found[0] if found else None


def _ours(item: Mapping[str, Any], owner: str, status: Status) -> bool:
    """The record that refused a fenced write is that very write, made already (re-sent)."""
    record = Record.from_item(item)
    return record.owner == owner and record.status is status


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
