"""The runbook in code: settle one order, refund one charge (`python -m idem settle` / `refund`).

- `plan_settle(...)` reads an order's record in the ledger (by its idempotency key) and its
  charges at Stripe (by the key in their metadata, or one charge by its id) and says what settles
  it: book the charge the provider made (a conditional put of the ledger line), release the record
  so a retry can charge (a conditional update to `released`, expired now: the handler's next claim
  takes it over; nothing is deleted), or nothing. `apply_settle` does it.
- `plan_refund(...)` reads one PaymentIntent and its refunds; `apply_refund` refunds it with its own
  idempotency key (`refund#<id>`: running the command twice never refunds twice) and books the
  refund in the ledger (`refund#<id>`, outside both indexes: the reconciliation's lines stay charges).
  A refund Stripe made that the ledger does not book (its booking failed, or it was made outside
  this command, in Stripe's Dashboard: the reconciliation's `refund` finding) is booked by the next
  run (`book refund`), never refunded again or topped up.
- `record_audit(...)` writes who ran a command (the caller's ARN from STS GetCallerIdentity), why
  (`--reason`), what it found and what became of it: one `audit#...` item per act, never overwritten.

Every write is conditional on what the plan read, so a plan made stale by the handler (or by a
second person) is refused, never applied over newer state. Stripe is called with the standard
library, as the reconciliation calls it (job.py), with the secret key as a Bearer token
(https://docs.stripe.com/api/authentication).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from botocore.exceptions import ClientError

from ..dynamo import from_item, to_item, values
from .charges import account_of
from .job import CHARGED, STRIPE_API, day_of

#: PaymentIntent statuses where money will move or not, not yet known: settle waits.
PENDING = ("processing", "requires_capture")
#: A record a person may release: nothing was charged for it, and nobody is on it.
RELEASABLE = ("in_progress", "pending", "needs_attention", "claimed")


class RunbookError(Exception):
    """Bad input or a state the command must not touch: one line for the person, exit code 2."""


@dataclass(frozen=True)
class Intent:
    id: str
    status: str
    cents: int
    currency: str
    customer: str
    created: float
    metadata: Mapping[str, str]


@dataclass
class Plan:
    """What a command found, and what it would do (`action`: book, release, refund or nothing)."""

    subject: str
    action: str
    because: str
    record: Mapping[str, Any] = field(default_factory=dict)
    intent: Intent | None = None
    others: list[Intent] = field(default_factory=list)  # more charges for the order: refund them
    refunded_cents: int = 0  # refund: what Stripe had refunded of the charge when the plan was made

    def render(self, done: bool = False) -> str:
        verb = {"book": "booked" if done else "would book", "release": "released" if done else "would release",
                "book refund": "booked" if done else "would book",
                "refund": "refunded" if done else "would refund", "nothing": "nothing to do",
                "redrive": "redriven" if done else "would redrive"}[self.action]
        lines = [f"{self.subject}: {verb}{' ' if self.action == 'refund' else ': '}{self.because}"]
        lines += [f"also charged for this order: {o.id} ({o.cents} {o.currency}): python -m idem refund --charge {o.id}"
                  for o in self.others]
        if not done and self.action != "nothing":
            lines.append("dry run: nothing was changed; run again with --yes --reason TEXT to do it")
        return "\n".join(lines)


# -- Stripe, over HTTPS ---------------------------------------------------------------------------
Send = Callable[[urllib.request.Request], Mapping[str, Any]]


class StripeApi:
    """The few Stripe v1 calls the runbook makes. `send` returns the JSON answer or raises
    RunbookError with Stripe's own message (its error body: https://docs.stripe.com/api/errors)."""

    def __init__(self, secret: str, api: str = STRIPE_API, send: Send | None = None) -> None:
        self.secret, self.api = secret, api.rstrip("/")
        self.send = send or _send

    def _request(self, method: str, path: str, params: Mapping[str, str] | None = None,
                 idempotency_key: str = "") -> Mapping[str, Any]:
        body = urllib.parse.urlencode(params or {})
        url = f"{self.api}{path}" + (f"?{body}" if method == "GET" and body else "")
        headers = {"Authorization": f"Bearer {self.secret}"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        data = body.encode() if method == "POST" else None
        return self.send(urllib.request.Request(url, data=data, headers=headers, method=method))

    def intent(self, intent_id: str) -> Intent | None:
        try:
            return _intent(self._request("GET", f"/v1/payment_intents/{urllib.parse.quote(intent_id)}"))
        except RunbookError as error:
            if "No such payment_intent" in str(error) or "resource_missing" in str(error):
                return None
            raise

    def intents_for(self, key: str, stack: str) -> list[Intent]:
        """Every PaymentIntent whose metadata names this order's key (and this stack, when known)."""
        query = f"metadata['idempotency_key']:'{_quoted(key)}'"
        if stack:
            query += f" AND metadata['idem_stack']:'{_quoted(stack)}'"
        found, page = [], ""
        while True:
            params = {"query": query, "limit": "100", **({"page": page} if page else {})}
            answer = self._request("GET", "/v1/payment_intents/search", params)
            found += [_intent(item) for item in answer.get("data", [])]
            page = str(answer.get("next_page") or "")
            if not answer.get("has_more") or not page:
                return sorted(found, key=lambda i: (i.created, i.id))

    def refunded(self, intent_id: str) -> int:
        """Cents already refunded of this PaymentIntent (its succeeded refunds)."""
        answer = self._request("GET", "/v1/refunds", {"payment_intent": intent_id, "limit": "100"})
        return sum(int(r["amount"]) for r in answer.get("data", []) if r.get("status") in ("succeeded", "pending"))

    def refunds(self, intent_id: str) -> list[Mapping[str, Any]]:
        """This PaymentIntent's refunds that moved or will move money."""
        answer = self._request("GET", "/v1/refunds", {"payment_intent": intent_id, "limit": "100"})
        return [r for r in answer.get("data", []) if r.get("status") in ("succeeded", "pending")]

    def refund(self, intent: Intent, metadata: Mapping[str, str]) -> Mapping[str, Any]:
        params = {"payment_intent": intent.id, **{f"metadata[{k}]": v for k, v in metadata.items()}}
        return self._request("POST", "/v1/refunds", params, idempotency_key=f"refund#{intent.id}")


def _send(request: urllib.request.Request) -> Mapping[str, Any]:
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310 (https, the configured API)
            body: Mapping[str, Any] = json.load(answer)
            return body
    except urllib.error.HTTPError as refused:
        try:
            error = json.load(refused).get("error", {})
        except ValueError:
            error = {}
        code = f" ({error['code']})" if error.get("code") else ""
        raise RunbookError(f"Stripe answered {refused.code}{code}: {error.get('message', refused.reason)}") from None
    except (urllib.error.URLError, OSError) as lost:
        raise RunbookError(f"Stripe could not be reached at {request.full_url.split('/v1')[0]}: {lost}") from None


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _intent(item: Mapping[str, Any]) -> Intent:
    return Intent(str(item["id"]), str(item.get("status", "")),
                  int(item.get("amount_received") or item.get("amount") or 0), str(item.get("currency", "")),
                  str(item.get("customer") or ""), float(item.get("created", 0)),
                  {str(k): str(v) for k, v in (item.get("metadata") or {}).items()})


# -- the ledger ---------------------------------------------------------------------------------
def read_record(dynamodb: Any, table: str, key: str) -> dict[str, Any]:
    return from_item(dynamodb.get_item(TableName=table, Key=to_item({"pk": key}), ConsistentRead=True).get("Item")) or {}


# -- settle ------------------------------------------------------------------------------------
def plan_settle(dynamodb: Any, table: str, stripe: StripeApi, *, key: str = "", charge: str = "",
                stack: str = "", now: float | None = None) -> Plan:
    """What settles the order `key` (or the order of the charge `charge`)."""
    now = time.time() if now is None else now
    if charge and not key:
        found = stripe.intent(charge)
        if found is None:
            raise RunbookError(f"no PaymentIntent {charge} at Stripe: check the id (pi_...) and the key's mode")
        key = found.metadata.get("idempotency_key", "")
        if not key:
            raise RunbookError(f"{charge} names no idempotency_key in its metadata: not a charge this stack made")
    if not key.startswith("charge#"):
        raise RunbookError(f"{key!r} is not an order's idempotency key (they start charge#; the reconciliation "
                           "report prints each one)")
    record = read_record(dynamodb, table, key)
    status = str(record.get("status", ""))
    intents = [i for i in stripe.intents_for(key, stack) if not stack or i.metadata.get("idem_stack") in (stack, None)]
    booked_id = str(record.get("charge_id", ""))
    if status == "done" and booked_id and booked_id not in {i.id for i in intents}:
        lookup = stripe.intent(booked_id)  # by id: no search lag
        if lookup is not None:
            intents = sorted(intents + [lookup], key=lambda i: (i.created, i.id))
    moved = [i for i in intents if i.status in CHARGED and i.status not in PENDING]
    waiting = [i for i in intents if i.status in PENDING]
    subject = f"order {key[:40]}"
    if not record and not intents:
        raise RunbookError(f"unknown order {key}: no ledger record and no charge at Stripe")
    if waiting and not moved:
        return Plan(subject, "nothing", f"{waiting[0].id} is {waiting[0].status} at Stripe: settle again once it "
                    "has succeeded or failed", record, waiting[0])
    if moved:
        first, others = moved[0], moved[1:]
        if status == "done":
            if booked_id == first.id:
                return Plan(subject, "nothing", f"booked already ({first.id}, {first.cents} {first.currency})",
                            record, first, others)
            return Plan(subject, "nothing", f"the ledger books {booked_id}, which stays; Stripe charged {first.id} "
                        "first, on no line: refund it (as the reconciliation's double finding says)", record, first,
                        [i for i in moved if i.id != booked_id])
        if status == "in_progress" and float(record.get("lease_until") or 0) > now:
            raise RunbookError(f"an invocation holds {key[:40]} until {_utc(float(record['lease_until']))}: "
                               "settle it after that")
        return Plan(subject, "book", f"Stripe charged {first.id} ({first.cents} {first.currency}) and the ledger "
                    f"says {status or 'nothing'}: book it", record, first, others)
    # no money moved for this order
    if status in ("", "declined"):
        return Plan(subject, "nothing", "declined: the provider's final answer" if status else
                    "no record and no charge: re-send the upload's event (idem redrive) to charge it", record)
    if status == "in_progress" and float(record.get("lease_until") or 0) > now:
        raise RunbookError(f"an invocation holds {key[:40]} until {_utc(float(record['lease_until']))}: "
                           "settle it after that")
    if status == "done":
        return Plan(subject, "release", f"the ledger books {booked_id or 'a charge'} but Stripe has none: release "
                    "the line, so a re-sent event charges the order", record)
    if status == "released":
        return Plan(subject, "nothing", "released already: a retry (idem redrive) charges the order once", record)
    if status in RELEASABLE:
        return Plan(subject, "release", f"the record is {status} and Stripe has no charge for it: release it, "
                    "so a retry (idem redrive) charges the order once", record)
    raise RunbookError(f"{key[:40]} is {status!r}, which this command does not settle")


def apply_settle(dynamodb: Any, table: str, plan: Plan, now: float | None = None) -> None:
    """Do what the plan says, only if the record is still as the plan read it."""
    now = time.time() if now is None else now
    key = str(plan.record.get("pk") or "")
    before = plan.record
    if plan.action == "book":
        assert plan.intent is not None
        intent = plan.intent
        key = key or intent.metadata.get("idempotency_key", "")
        line = {**{k: v for k, v in before.items() if k not in ("expires_at", "lease_until", "owner")},
                "pk": key, "status": "done", "charge_id": intent.id, "cents": intent.cents,
                "account": account_of(intent.metadata, intent.customer) or "unassigned",
                "customer": intent.customer or before.get("customer"), "currency": intent.currency or before.get("currency"),
                "booked_at": now, "booked_day": day_of(now),
                "result": {"status": "settled", "charge_id": intent.id, "amount_cents": intent.cents}}
        _conditional(dynamodb.put_item, TableName=table, Item=to_item(line), **_unchanged(before))
    elif plan.action == "release":
        # Never a delete: the record says it was released and keeps what it held; expired now, so
        # the handler's next claim (its condition: expires_at <= now) takes it over. Out of both
        # indexes (no account, no booked_at/booked_day): no longer a ledger line.
        condition = _unchanged(before)
        condition["ExpressionAttributeNames"] = {**condition.get("ExpressionAttributeNames", {}), "#s": "status"}
        condition["ExpressionAttributeValues"] = {**condition.get("ExpressionAttributeValues", {}), **values(
            released="released", now=now, held=json.dumps(dict(before), default=str, sort_keys=True))}
        _conditional(dynamodb.update_item, TableName=table, Key=to_item({"pk": key}),
                     UpdateExpression="SET #s = :released, expires_at = :now, released_at = :now, held = :held "
                                      "REMOVE account, booked_at, booked_day, lease_until", **condition)
    elif plan.action != "nothing":
        raise ValueError(f"settle does not {plan.action}")


def _unchanged(before: Mapping[str, Any]) -> dict[str, Any]:
    """The condition that the record is still what the plan read (absent, or the same status and owner)."""
    if not before:
        return {"ConditionExpression": "attribute_not_exists(pk)"}
    names = {"#s": "status"}
    named: dict[str, Any] = {"status": before["status"]}
    condition = "#s = :status"
    if before.get("owner"):
        names["#o"], named["owner"] = "owner", before["owner"]
        condition += " AND #o = :owner"
    if before.get("charge_id"):
        names["#c"], named["charge_id"] = "charge_id", before["charge_id"]
        condition += " AND #c = :charge_id"
    return {"ConditionExpression": condition, "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values(**named)}


def _conditional(call: Callable[..., Any], **request: Any) -> None:
    try:
        call(**request)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            raise RunbookError("the record changed since it was read (a handler or another person is on it): "
                               "nothing was written; run the command again") from None
        raise


# -- refund ------------------------------------------------------------------------------------
def plan_refund(dynamodb: Any, table: str, stripe: StripeApi, charge: str, stack: str = "") -> Plan:
    if not charge.startswith("pi_"):
        raise RunbookError(f"{charge!r} is not a PaymentIntent id (pi_...): the reconciliation report names each")
    intent = stripe.intent(charge)
    if intent is None:
        raise RunbookError(f"no PaymentIntent {charge} at Stripe: check the id and the key's mode (test or live)")
    owner = intent.metadata.get("idem_stack")
    if stack and owner is not None and owner != stack:
        raise RunbookError(f"{charge} belongs to stack {owner!r}, not {stack!r}: nothing was refunded")
    if intent.status != "succeeded":
        raise RunbookError(f"{charge} is {intent.status}: only a succeeded charge can be refunded")
    refunded = stripe.refunded(charge)
    left = intent.cents - refunded
    key = intent.metadata.get("idempotency_key", "")
    booked = read_record(dynamodb, table, f"refund#{charge}")
    on_books = int(booked.get("refunded_cents") or 0)
    if refunded > on_books:
        # Stripe refunded more than the ledger books: an earlier run's write failed, or the refund was
        # made outside this command (Stripe's Dashboard; the reconciliation's `refund` finding). Book
        # what Stripe refunded first, never refund the rest unasked: a rerun, once booked, refunds it.
        return Plan(f"charge {charge}", "book refund", f"Stripe refunded {refunded} {intent.currency} of "
                    f"{intent.cents} and the ledger books {on_books} (an earlier run's write failed, or a refund "
                    "made outside idem refund: confirm it was meant): book it", booked, intent,
                    refunded_cents=refunded)
    if left <= 0:
        raise RunbookError(f"{charge} is refunded already ({intent.cents} {intent.currency}) and booked: "
                           "nothing to do")
    record = read_record(dynamodb, table, key) if key else {}
    note = ""
    if record.get("charge_id") == charge:
        note = "; the ledger books it as the order's charge: settle the order afterwards (idem settle --key ...)"
    return Plan(f"charge {charge}", "refund", f"{left} {intent.currency} to "
                f"{account_of(intent.metadata, intent.customer) or 'the customer'}{note}", record, intent,
                refunded_cents=refunded)


def apply_refund(dynamodb: Any, table: str, stripe: StripeApi, plan: Plan, now: float | None = None) -> str:
    """Refund (idempotency key refund#<id>: a rerun replays the same refund) and book it; or, for a
    `book refund` plan, book what Stripe refunded. The line only ever rises to what Stripe reports
    (the webhook books the same line from charge.refunded): returns the refund's id."""
    now = time.time() if now is None else now
    assert plan.intent is not None
    intent = plan.intent
    if plan.action == "refund":
        metadata = {k: v for k, v in intent.metadata.items() if k in ("idem_stack", "idempotency_key", "order_id")}
        refund = stripe.refund(intent, metadata)
        refund_id, cents = str(refund["id"]), plan.refunded_cents + int(refund.get("amount", intent.cents))
    elif plan.action == "book refund":
        refunds = stripe.refunds(intent.id)
        refund_id, cents = (str(refunds[0]["id"]) if refunds else ""), plan.refunded_cents
    else:
        raise ValueError(f"refund does not {plan.action}")
    named = dict(refunded="refunded", rid=refund_id, cents=cents, pi=intent.id, now=now,
                 order=intent.metadata.get("idempotency_key") or "-")
    try:
        dynamodb.update_item(TableName=table, Key=to_item({"pk": f"refund#{intent.id}"}),
                             UpdateExpression="SET #s = :refunded, refund_id = :rid, refunded_cents = :cents, "
                                              "refunded_charge = :pi, order_key = :order, refunded_at = :now",
                             ConditionExpression="attribute_not_exists(pk) OR refunded_cents < :cents",
                             ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues=values(**named))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
            raise  # the refund is made: a rerun books it (`book refund`)
    return refund_id


def record_audit(dynamodb: Any, table: str, *, command: str, plan: Plan, who: str, why: str, outcome: str,
                 now: float | None = None) -> str:
    """One item per act, never overwritten: who ran which command (their ARN), why, what it found
    (the record as read) and what became of it. Returns its key."""
    now = time.time() if now is None else now
    subject = plan.subject.replace(" ", "#")
    key = f"audit#{_utc(now)}#{command}#{subject}#{int(now * 1e6) % 1_000_000:06d}"
    dynamodb.put_item(TableName=table, ConditionExpression="attribute_not_exists(pk)", Item=to_item({
        "pk": key, "kind": "audit", "command": command, "subject": plan.subject, "action": plan.action,
        "who": who, "why": why, "at": now, "outcome": outcome, "because": plan.because,
        "charge": plan.intent.id if plan.intent else None,
        "before": json.dumps(dict(plan.record), default=str, sort_keys=True)}))
    return key


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
