"""The keyed scribe, the handler to copy: charge a customer once per ORDER, however often S3, Lambda and
the uploader repeat it (its siblings: README.md; what it promises, and why: docs/money_contract.md).
1. Claim: one conditional put of an `in_progress` record under the order's key, leased to this
   invocation's deadline; a refused put returns the record (a duplicate, a live lease, or a lease run
   out or a park before any charge was sent, taken over keeping the first attempt's time and method).
2. Charge the account's linked customer the file's amount, with the order's key as Stripe's
   idempotency key; past the key window, search for the charge first.
3. Commit in one write, only if this invocation still owns the claim: it becomes the ledger line.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Mapping

import boto3  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_events import log, log_outcome, metrics_document, parking, read_logged, utc
    from keyed_orders import (OrderRef, Upload as Upload, check_same_order, identify, sent_as, terms_of,
                              the_charge_found, who_pays)
    from keyed_stripe import (ATTENTION, DECLINED, INTENT_MEANS, PENDING, RETRY, PaymentProvider, charges_with_key,
                              make_provider, meaning_unless_auth, read_saved_method, why_refused)
    from keyed_settings import (KEY_AGE_MARGIN_SECONDS, Claim as Claim, ConfigError as ConfigError, LostOwnership,
                                NeedsAttention, ProviderAuthFailed, Record as Record, RecordsFailed, Settings,
                                Status as Status, WorkInProgress, as_item, as_values, aws_config, bounded,
                                conditional_write, enough_time, from_item, ours, settings_from_env)
else:  # the same files, inside idem (the workbook, and the stack's artifact)
    from .keyed_events import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        log, log_outcome, metrics_document, parking, read_logged, utc)
    from .keyed_orders import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        OrderRef, Upload as Upload, check_same_order, identify, sent_as, terms_of, the_charge_found, who_pays)
    from .keyed_stripe import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        ATTENTION, DECLINED, INTENT_MEANS, PENDING, RETRY, PaymentProvider, charges_with_key, make_provider,
        meaning_unless_auth, read_saved_method, why_refused)
    from .keyed_settings import (  # type: ignore[import-not-found, no-redef, unused-ignore]
        KEY_AGE_MARGIN_SECONDS, Claim as Claim, ConfigError as ConfigError, LostOwnership, NeedsAttention,
        ProviderAuthFailed, Record as Record, RecordsFailed, Settings, Status as Status, WorkInProgress, as_item,
        as_values, aws_config, bounded, conditional_write, enough_time, from_item, ours, settings_from_env)

#: The fence of every write to a claimed record: only its owner, while it is in progress.
FENCE = "#o = :me AND #s = :in_progress"


class KeyedLedger:
    """The idempotency records and the books, in one DynamoDB table, every write conditional."""

    def __init__(self, client: Any, table: str, now: Callable[[], float] = time.time) -> None:
        self.client, self.table, self.now = client, table, now
        self.sending: set[str] = set()  # the owners whose charge went to the provider, until they end

    def claim(self, key: str, owner: str, lease_until: float, source: str = "",
              metadata: Mapping[str, str] | None = None, payment_method: str = "") -> Claim:
        """Claim the order in one call, or learn who holds it; only a lease that ran out is taken over."""
        now = self.now()
        mine = Record(key, Status.IN_PROGRESS, owner, lease_until, source=source, created_at=now, first_attempt_at=now,
                      metadata=dict(metadata) if metadata else None, payment_method=payment_method, unsent=True)
        old = conditional_write(self.client.put_item, TableName=self.table, Item=as_item(mine.to_plain(unsent=None)),
                                ConditionExpression="attribute_not_exists(pk)",
                                ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old is None:
            return Claim(won=True, mine=mine)
        existing = Record.from_item(old)
        if existing.owner == owner and existing.status is Status.IN_PROGRESS:
            return Claim(won=True, mine=replace(existing, unsent=True))  # our own put, re-sent after a lost answer
        if (existing.status is Status.IN_PROGRESS and existing.lease_until <= now) \
                or existing.status is Status.RELEASED or existing.unsent and existing.status is Status.NEEDS_ATTENTION:
            return self._take_over(existing, mine)  # a lease run out, released, or parked before any charge
        return Claim(won=False, existing=existing)

    def _take_over(self, old: Record, new: Record) -> Claim:
        """Take over a run-out lease, a released or parked-unsent record, fenced to what we read (Claim.existing)."""
        mine = replace(old, status=Status.IN_PROGRESS, owner=new.owner, lease_until=new.lease_until,
                       source=new.source or old.source, expires_at=0.0, metadata=old.metadata or new.metadata,
                       payment_method=new.payment_method if old.unsent and old.status is Status.NEEDS_ATTENTION
                       else old.payment_method or new.payment_method)  # parked unsent: nothing was sent with it
        leased = old.status is Status.IN_PROGRESS  # a released record's lease was removed with it
        fence = "#o = :old AND lease_until = :lease AND #s = :was" if leased else "#o = :old AND #s = :was"
        refused = conditional_write(
            self.client.put_item, TableName=self.table, Item=as_item(mine.to_plain(unsent=None)),
            ConditionExpression=fence,
            ExpressionAttributeNames={"#o": "owner", "#s": "status"}, ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ExpressionAttributeValues=as_values(old=old.owner, was=old.status.value,
                                                **({"lease": old.lease_until} if leased else {})))
        if refused is None:
            return Claim(won=True, mine=mine, existing=old)
        holder = Record.from_item(refused) if refused else None
        if holder and holder.owner == new.owner and holder.status is Status.IN_PROGRESS:
            return Claim(won=True, mine=mine)  # our takeover, re-sent after its answer was lost
        return Claim(won=False, existing=holder or replace(old, lease_until=self.now() + 1))

    def customer_of(self, account: str) -> str | None:
        """Who pays for the account: its customer mapping (`idem customers link`), read consistent; or None."""
        item = self.client.get_item(TableName=self.table, Key=as_item({"pk": f"account#{account}"}),
                                    ConsistentRead=True).get("Item")
        plain = from_item(item) if item else {}
        return str(plain["customer"]) if plain.get("kind") == "customer" and plain.get("customer") else None

    def _owned_update(self, claimed: Record, update: str, must: bool = True, **values: Any) -> None:
        """One UpdateItem, fenced to the owner of an in_progress record; LostOwnership (if `must`) when refused."""
        old = conditional_write(self.client.update_item, TableName=self.table, Key=as_item({"pk": claimed.key}),
                                UpdateExpression=update, ConditionExpression=FENCE,
                                ExpressionAttributeNames={"#s": "status", "#o": "owner",
                                                          **({"#r": "result"} if ":result" in update else {})},
                                ExpressionAttributeValues=as_values(me=claimed.owner,
                                                                    in_progress=Status.IN_PROGRESS.value, **values),
                                ReturnValuesOnConditionCheckFailure="ALL_OLD")
        status = Status(values.get("status", Status.IN_PROGRESS))  # what our own write, re-sent, left there
        if must and old is not None and not (old and ours(old, claimed.owner, status)):
            raise LostOwnership(f"{claimed.key} belongs to another invocation now")

    def remember_method(self, claimed: Record, method: str) -> Record:
        """Keep the payment method chosen on the order's first attempt in its record, if we own it."""
        self._owned_update(claimed, "SET payment_method = :method", method=method)
        return replace(claimed, payment_method=method)

    def finish(self, claimed: Record, status: Status, result: dict[str, Any], unsent: bool | None = False) -> None:
        """End the record without a charge (`declined`, `needs_attention`), if we still own it; kept for ever."""
        self._owned_update(claimed, "SET #s = :status, #r = :result, unsent = :unsent REMOVE expires_at",
                           status=status.value, result=result, unsent=unsent)

    def release(self, claimed: Record) -> None:
        """End our lease now, so that Lambda's retry can take over at once (refused: not ours, fine)."""
        self._owned_update(claimed, "SET lease_until = :now, unsent = :unsent", must=False, now=self.now(),
                           unsent=claimed.unsent and claimed.owner not in self.sending)  # nothing sent: say so

    def commit(self, claimed: Record, result: dict[str, Any], account: str, cents: int,
               charge_id: str, status: Status = Status.DONE, customer: str = "", currency: str = "") -> None:
        """Replace our claim with the ledger line, in one put fenced to the owner (docs/money_contract.md, 1 and 3)."""
        now = self.now()  # booked_day: the reconciliation's by_day index (template.yaml); a `pending` record is in
        booked = ({"account": account, "booked_at": now, "booked_day": time.strftime("%Y-%m-%d", time.gmtime(now))}
                  if status is Status.DONE else {"booked_at": now, "booked_day": "pending"})  # its `pending` part
        line = as_item({**claimed.to_plain(), "status": status.value, "expires_at": None, "result": result,
                        "cents": cents, "charge_id": charge_id, "customer": customer or claimed.customer or None,
                        "currency": currency or claimed.currency or None, "unsent": None, **booked})
        fence = as_values(me=claimed.owner, in_progress=Status.IN_PROGRESS.value)  # only the owner
        old = conditional_write(self.client.put_item, TableName=self.table, Item=line, ConditionExpression=FENCE,
                                ExpressionAttributeNames={"#s": "status", "#o": "owner"},
                                ExpressionAttributeValues=fence, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        if old and not ours(old, claimed.owner, status):  # else: our own put, re-sent after a lost answer
            raise LostOwnership(f"{claimed.key} belongs to another invocation now")
        if old == {}:  # no record at all: a person deleted our claim as we charged; book it anyway
            if conditional_write(self.client.put_item, TableName=self.table, Item=line,
                                 ConditionExpression="attribute_not_exists(pk)") is not None:
                raise LostOwnership(f"{claimed.key}: our claim was swept and another invocation holds it now")
            log.warning("our claim was deleted during the charge; booked it anyway",
                        extra={"idempotency_key": claimed.key, "at": self.now()})


class KeyedCharger:
    """One container's wiring: the ledger, the provider, S3 (to read orders) and the settings."""

    def __init__(self, dynamodb: Any, provider: PaymentProvider, settings: Settings,
                 now: Callable[[], float] = time.time, new_owner: Callable[[], str] = lambda: uuid.uuid4().hex,
                 s3: Any = None) -> None:
        self.ledger = KeyedLedger(dynamodb, settings.table, now)
        self.provider, self.settings, self.now, self.new_owner, self.s3 = provider, settings, now, new_owner, s3

    def order_of(self, upload: Upload) -> OrderRef:
        return identify(upload, self.settings.order_identity, self.s3)

    def charge_once(self, upload: Upload, remaining_ms: int, ref: OrderRef | None = None) -> dict[str, Any]:
        """Name the order, claim it, charge with its key, commit: the steps for one upload."""
        ref = ref or self.order_of(upload)
        lease_until = self.now() + remaining_ms / 1000  # the lease ends when this invocation must
        claim = self.ledger.claim(ref.idempotency_key, self.new_owner(), lease_until, ref.source,
                                  ref.metadata if ref.order else None,  # an order may come under two names
                                  (ref.order.payment_method if ref.order else None) or "")  # kept for every retry
        if not claim.won:
            assert claim.existing is not None
            return self._answered(ref, claim.existing)
        assert claim.mine is not None
        claimed = claim.mine
        try:
            if ref.problem is not None:  # no order to charge: held for a person, with the reason
                raise self._refused(claimed, str(ref.problem))
            return self._charge_and_commit(upload, ref, claimed)
        except NeedsAttention as parked:  # counted once per order: parked again after a takeover is `again`
            parked.again = parked.again or bool(claim.existing and claim.existing.status is Status.NEEDS_ATTENTION)
            raise
        except LostOwnership:
            raise  # not ours any more
        except Exception:
            # give it back now: Lambda retries in about a minute; a lease to our deadline would turn retries away
            self.ledger.release(claimed)
            raise
        finally:
            self.ledger.sending.discard(claimed.owner)

    def _answered(self, ref: OrderRef, existing: Record) -> dict[str, Any]:
        """What a claim that met a record answers: the stored result, or why not."""
        result = existing.result or {}
        if existing.status in (Status.DONE, Status.PENDING):  # charged (pending: not settled yet); never again:
            # a different amount, currency or customer is parked
            check_same_order(ref, (existing.cents or result.get("amount_cents"), existing.currency, existing.customer),
                             self.settings)
            return {**result, "status": "duplicate" if existing.status is Status.DONE else "pending"}
        if existing.status is Status.DECLINED:  # the provider's answer, kept
            return {**result, "status": existing.status.value}
        if existing.status is Status.NEEDS_ATTENTION:  # fail again: the event reaches the queue (counted once)
            raise NeedsAttention(f"{ref.source}: {result.get('reason', '')}", again=True)
        raise WorkInProgress(f"{ref.source} is being worked on until {utc(existing.lease_until)}; failing, "
                             "so that a retry of this event, if Lambda has one left, finds it finished")

    def _park(self, claimed: Record, reason: str) -> NeedsAttention:
        """Park the order: its record says why (needs_attention), for a person and the alarm."""
        with parking():  # if this write fails, parked or not, it is counted now: a retry finding it parked would not
            self.ledger.finish(claimed, Status.NEEDS_ATTENTION, {"reason": reason}, claimed.unsent)  # no charge yet
        return NeedsAttention(reason)

    def _refused(self, claimed: Record, reason: str) -> NeedsAttention:
        """A problem found before the charge: the order parked if nothing was sent under its key, or if that is not
        known; when an earlier attempt sent, its record is released for that attempt's retry, this upload refused."""
        if claimed.unsent:
            return self._park(claimed, reason)
        maybe = reason.replace("nothing was charged", "this upload charged nothing; an earlier attempt may have")
        if claimed.unsent is None:  # whether one sent is not known (it stopped): parked for a person
            return self._park(claimed, f"{maybe} (`idem settle` finds it)")
        self.ledger.release(claimed)  # one sent: the retry of that attempt books its charge
        return NeedsAttention(f"{maybe} (its retry books it)")

    def _method_for(self, ref: OrderRef, claimed: Record, customer: str) -> Record:
        """The payment method of the order's first attempt (the file's, kept by its claim, or the saved one, read
        once and kept): every retry sends the same (docs/money_contract.md, 1)."""
        read = getattr(self.provider, "saved_method", None)
        if claimed.payment_method or read is None or not customer.startswith("cus_"):
            return claimed
        try:  # a read sends no key: a 5xx or a lost answer is retried, a 401 re-reads the secret
            method = read_saved_method(read, customer)
        except NeedsAttention as problem:
            raise self._refused(claimed, f"{ref.source}: {problem}") from None
        return self.ledger.remember_method(claimed, method)

    def _charge_and_commit(self, upload: Upload, ref: OrderRef, claimed: Record) -> dict[str, Any]:
        try:
            customer = who_pays(self.ledger.customer_of(upload.account), ref)
            # the file's amount_cents; where no file is read, PRICE_PER_UPLOAD_CENTS (0 when unset: parked)
            cents = ref.order.amount_cents if ref.order else self.settings.price_per_upload_cents or 0
            currency = terms_of(ref, cents, self.settings)
        except NeedsAttention as problem:
            raise self._refused(claimed, str(problem)) from None
        found = look_up(self, upload, ref, claimed)  # past the key window: the charges made with its key
        try:
            made = the_charge_found(found, (cents, currency, customer), ref.source)
        except NeedsAttention as problem:
            raise self._park(claimed, str(problem)) from None
        if made is not None:  # booked as Stripe charged it; `processing` is booked when it settles
            return self._commit(upload, claimed, str(made.id), int(made.amount), PENDING if INTENT_MEANS.get(
                str(made.status)) == PENDING else "found", customer, currency)
        claimed = self._method_for(ref, claimed, customer)
        method = claimed.payment_method
        reference, metadata = sent_as(ref, claimed.metadata)  # the first claim's, on every attempt
        self.ledger.sending.add(claimed.owner)  # from here on a charge may exist (release says so)
        try:
            charge = self.provider.charge(customer=customer, amount=cents, currency=currency, reference=reference,
                                          idempotency_key=claimed.key, metadata=metadata,
                                          **({"payment_method": method} if method else {}))
        except Exception as error:
            meaning = meaning_unless_auth(error)  # by Stripe's error type and code; a rolled key: read again
            if meaning.what == RETRY:  # rate limit, lock, key in flight, api_error, no answer
                raise  # release the lease (charge_once), and let Lambda retry with the same key
            result = {"status": meaning.what, "code": meaning.code, "decline_code": meaning.decline_code, "charge_id":
                      str(getattr(getattr(getattr(error, "error", None), "payment_intent", None), "id", None) or "")}
            if meaning.what == DECLINED:  # a final answer: not a failure to retry
                result["reason"] = meaning.reason
                self.ledger.finish(claimed, Status.DECLINED, result)
                return result
            unsent, result["reason"] = why_refused(error, meaning, claimed.key, claimed, utc(
                claimed.first_attempt_at + self.settings.provider_key_retention_seconds))
            self.ledger.finish(claimed, Status.NEEDS_ATTENTION, result, unsent)  # unsent: the fix takes it over
            raise NeedsAttention(f"{ref.source}: {result['reason']}") from error
        what = INTENT_MEANS.get(str(getattr(charge, "status", None) or "succeeded"), ATTENTION)
        if what == DECLINED:  # requires_action off-session, or requires_payment_method
            result = {"status": DECLINED, "code": str(charge.status), "charge_id": charge.id}
            self.ledger.finish(claimed, Status.DECLINED, result)
            return result
        return self._commit(upload, claimed, charge.id, cents, what, customer, currency)

    def _commit(self, upload: Upload, claimed: Record, charge_id: str, cents: int,
                status: str = "charged", customer: str = "", currency: str = "") -> dict[str, Any]:
        result = {"status": status, "charge_id": charge_id, "amount_cents": cents}
        try:  # a pending charge (Stripe: processing) is booked when it settles (`idem settle`)
            self.ledger.commit(claimed, result, upload.account, cents, charge_id,
                               Status.PENDING if status == PENDING else Status.DONE, customer, currency)
        except LostOwnership:
            # our lease ran out and another took over: the key made its charge ours, and it books it (counted)
            log.warning("lost ownership before the commit: the new owner books this charge",
                        extra={"idempotency_key": claimed.key, "charge_id": charge_id, "at": self.now()})
            return {**result, "status": "superseded"}
        return result


_charger: KeyedCharger | None = None


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """What Lambda calls: every order charged once; a failed upload fails the invocation after the others."""
    global _charger
    if _charger is None:  # a cold start: read the settings and build the clients once (bounded)
        settings = settings_from_env(os.environ)
        _charger = KeyedCharger(bounded(boto3.client("dynamodb", config=aws_config())), make_provider(), settings,
                                s3=bounded(boto3.client("s3", config=aws_config())))
    request_id = str(getattr(context, "aws_request_id", ""))
    batch = read_logged(event, request_id, _charger.settings.charge_events)  # EventError: no S3 notification
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
    if any(isinstance(f, ProviderAuthFailed) for f in failures):
        _charger = None  # the next invocation reads the secret again (a rolled key), as a cold start does
    records = event.get("Records") if isinstance(event, Mapping) else None
    if records and all(isinstance(r, Mapping) and r.get("eventSource") == "aws:sqs" for r in records):
        # from SQS: the answer names the failed messages, which alone come back
        return {"batchItemFailures": [{"itemIdentifier": str(records[i].get("messageId", ""))}
                                      for i in sorted(failed_at)]}
    if len(failures) == 1 and not batch.malformed:
        raise failures[0]
    if failures or batch.malformed:
        raise RecordsFailed(f"{len(failures)} upload(s) failed and {len(batch.malformed)} record(s) "
                            f"unreadable of {len(batch.objects) + len(batch.skipped)}; see the log lines")
    return {"status": "test_event" if batch.test_event else "ok", "processed": processed}


def look_up(charger: KeyedCharger, upload: Upload, ref: OrderRef, claimed: Record) -> list[Any]:
    """The charges made with this order's key, searched for once the key may be forgotten (the key's age rule)."""
    now, window = charger.now(), charger.settings.provider_key_retention_seconds
    # Stripe: keys "are eligible to be removed ... after they're at least 24 hours old"
    # (https://docs.stripe.com/api/idempotent_requests): PROVIDER_KEY_RETENTION_SECONDS.
    key_age, event_age = now - claimed.first_attempt_at, now - upload.event_time
    if claimed.first_attempt_at and 0 <= key_age < window - KEY_AGE_MARGIN_SECONDS \
            and upload.event_time and 0 <= event_age < window:
        return []  # inside the key window: the key itself replays an earlier charge
    known = (f"its first charge attempt {key_age / 3600:.1f} h ago" if claimed.first_attempt_at else
             "no known first attempt") + (f", the event {event_age / 3600:.1f} h old" if upload.event_time
                                          else ", the event of unknown age")
    try:
        return charges_with_key(charger.provider, ref.charge_reference, claimed.key)
    except Exception as unavailable:  # never charge blind: park it for a person
        meaning_unless_auth(unavailable)  # a refused key: read again on the retry
        # Search may run "up to an hour behind during outages" (https://docs.stripe.com/api/payment_intents/search);
        # within that hour the key still replays. Without an answer nothing proves there was no charge.
        raise charger._park(claimed, f"{ref.source}: {known}, past the provider's key window or not to be trusted, "
                            f"and the look-up failed ({str(unavailable)[:120]}): check whether it was charged "
                            "(`idem settle`), then re-send it or close it") from None
