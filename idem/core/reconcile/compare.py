"""The reconciliation's comparison: a window's uploads, ledger lines and charges, judged inside the
window; each difference a `Finding` with the command that settles it.

The charges given are the window's and, for each order seen in it, every charge of that order
ever made (charges.order_charges), plus each older charge a line of the window names:
so one order's charges are grouped whatever the time between them, and a line booked today for
an older charge is matched with it."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from .report import Entry, Finding, UploadSeen, WindowReport

#: A charge in one of these statuses has not settled: one finding, `pending`, until it does
#: (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status).
UNSETTLED = ("processing", "requires_capture")
#: A record `pending` this long after it was recorded is checked against Stripe every window: Stripe retries an
#: event "for up to three days" (https://docs.stripe.com/webhooks#retries); past that, a settling event the ledger
#: lacks may never come (docs/money_contract.md, 4).
STALE_PENDING_SECONDS = 3 * 86400
#: PaymentIntents retrieved for stale records a window, at most (oldest first; ~300 ms each, four at a time).
MAX_STALE_CHECKS = 300


def compare(lines: Iterable[Entry], charges: Iterable[Entry], start: float, end: float,
            uploads: Iterable[tuple[UploadSeen, str]] = (),
            status_of: Callable[[str], tuple[str, Mapping[str, Any]]] | None = None,
            settle: str = "python -m idem settle", refund: str = "python -m idem refund",
            customer_of: Callable[[str], str | None] | None = None,
            asked: Mapping[str, tuple[int, str]] | None = None) -> WindowReport:
    """Lines and charges as read, and the window's uploads with their order keys; differences
    only inside [start, end). `status_of(key)` reads a record the lines did not show (declined,
    pending and needs_attention records have no line); `customer_of(account)` is the customer the
    account maps to (None: no mapping), compared with each booked charge's customer; `asked` (upload uri ->
    amount_cents, currency) what each upload's order file asks, compared with what its order was charged
    when the upload came after the booking (the handler refuses such a duplicate and leaves the record done)."""
    lines, uploads = list(lines), list(uploads)
    charges = list({charge.charge_id: charge for charge in charges}.values())  # one entry per charge
    booked = {line.charge_id: line for line in lines}
    booked_keys = {line.key for line in lines}
    charged = {charge.charge_id: charge for charge in charges}
    inside = [line for line in lines if start <= line.at < end]
    made = [charge for charge in charges if start <= charge.at < end]
    report = WindowReport(start, end, uploads=len(uploads), ledger_lines=len(inside), provider_charges=len(made))
    found = report.findings
    pending_keys: set[str] = set()  # orders reported pending (their record says so) ...
    pending_charges: set[str] = set()  # ... and the charges those records name

    line_of = {line.key: line for line in lines}
    for upload, key in uploads:
        if key and key in booked_keys:
            line = line_of[key]
            if upload.at > line.at:  # sent again after it was booked: on the terms charged?
                found += _asked_other(upload, key, (asked or {}).get(upload.uri), line.cents, line.currency,
                                      line.charge_id, settle)
            continue
        status, result = status_of(key) if (key and status_of) else ("", {})
        if status == "done" and result.get("amount_cents") is not None:
            found += _asked_other(upload, key, (asked or {}).get(upload.uri), int(result["amount_cents"]), "",
                                  str(result.get("charge_id") or "?"), settle)
        if status in ("done", "declined"):
            continue  # booked before the window (an uploader's retried PUT), or a final decline
        if status == "needs_attention":
            found.append(Finding("needs_attention", upload.uri, key, str(result.get("reason", ""))[:300],
                                 f"{settle} --key {key}"))
        elif status == "pending":  # charged, still not settled when its window is judged
            pending_keys.add(key)
            pending_charges.add(str(result.get("charge_id", "")))
            found.append(Finding("pending", upload.uri, key, _pending_detail(str(result.get("charge_id") or "?"),
                                                                             charged), f"{settle} --key {key}"))
        elif not key:
            found.append(Finding("missing_line", upload.uri, "", "no readable order_id: no order, no charge",
                                 f"fix the file and upload it again (s3://{upload.bucket}/{upload.key})"))
        else:
            found.append(Finding("missing_line", upload.uri, key,
                                 f"no ledger line (record: {status or 'none'})", f"{settle} --key {key}"))
    # Every commit writes booked_day (keyed, `idem settle`), so a booked charge's line is in the
    # day index; a ledger's lines from before the index reach it through backfill_booked_day.
    report.uncharged = sorted((line for line in inside if line.charge_id not in charged),
                              key=lambda e: e.charge_id)
    for line in report.uncharged:
        found.append(Finding("uncharged", line.charge_id, line.key,
                             f"booked for {line.account} ({line.cents} cents); the provider holds no charge "
                             "by that id in which money moved", _settle_one(settle, line)))
    doubled = _doubles(charges, start, end, refund, found, set(booked),
                       (lambda key: _booked_charge(status_of, key)) if status_of else None)
    for charge in sorted((c for c in made if c.charge_id not in booked), key=lambda e: e.charge_id):
        if charge.charge_id in doubled:
            continue  # a second charge has no line by design: refunding it is the fix
        if charge.charge_id in pending_charges or (charge.key and charge.key in pending_keys):
            continue  # its order's record is pending, reported above: one finding for the order
        if charge.status in UNSETTLED:  # a charge not settled has no line yet: one finding, pending
            found.append(Finding("pending", charge.charge_id, charge.key,
                                 f"charge {charge.charge_id} not settled yet (Stripe: {charge.status})",
                                 _settle_one(settle, charge)))
            continue
        report.unbooked.append(charge)
        found.append(Finding("unbooked", charge.charge_id, charge.key,
                             f"{charge.cents} cents from {charge.account}, on no ledger line",
                             _settle_one(settle, charge)))
    for line in sorted(inside, key=lambda e: e.charge_id):
        same = charged.get(line.charge_id)
        if same is None:
            continue
        # The charge's metadata names its order's key (Stripe's own key: at most 255 characters, longer ones are
        # sent hashed, keyed_stripe.stripe_key): one naming another order's key books nothing for this order.
        if same.key and line.key and same.key != line.key and len(line.key) <= 255:
            report.uncharged.append(line)
            found.append(Finding("uncharged", line.charge_id, line.key,
                                 f"booked for {line.account} ({line.cents} cents) naming {line.charge_id}, a charge "
                                 f"made for another order (key {same.key}): none of its own", _settle_one(settle, line)))
            continue
        if same.status in UNSETTLED:  # booked before Stripe settled it: not taken yet, and it "can still fail"
            found.append(Finding("pending", line.charge_id, line.key, f"booked for {line.account} ({line.cents} "
                                 f"cents) while Stripe says {same.status}", _settle_one(settle, line)))
            continue
        _compare_terms(line, same, settle, report)
        problem = _account_problem(line, same, customer_of)
        if problem:
            found.append(Finding("account", line.charge_id, line.key, problem, f"{refund} --charge {line.charge_id}"))
    return report


def _doubles(charges: list[Entry], start: float, end: float, refund: str, found: list[Finding],
             booked: set[str] | None = None, booked_of: Callable[[str], str] | None = None) -> set[str]:
    """Orders with more than one charge, whenever each was made: reported in the window of the
    order's last charge, every charge but the one kept with its refund. Charges are one order's
    when they share the order's key or the order (account and order_id) their metadata names.
    The charge kept is the one the ledger books (a line's charge, else the one the order's
    record names: `booked_of(key)`), else the first: refunding the booked one would leave the
    order's line naming a refunded charge and the other charge on no line (P3)."""
    booked = set() if booked is None else booked
    parent: dict[str, str] = {}

    def root(label: str) -> str:
        while parent.setdefault(label, label) != label:
            label = parent[label]
        return label

    for charge in charges:
        labels = [f"key:{charge.key}"] * bool(charge.key) + [f"order:{charge.order}"] * bool(charge.order)
        for label in labels:
            parent[root(label)] = root(f"charge:{charge.charge_id}")
    groups: dict[str, list[Entry]] = {}
    for charge in charges:
        if charge.key or charge.order:
            groups.setdefault(root(f"charge:{charge.charge_id}"), []).append(charge)
    doubled: set[str] = set()
    for group in sorted(groups.values(), key=lambda g: min(c.charge_id for c in g)):
        group.sort(key=lambda c: (c.at, c.charge_id))
        if len(group) > 1 and start <= group[-1].at < end:  # reported in the window of its last charge
            kept = _kept(group, booked, booked_of)
            extras = [c for c in group if c is not kept]
            doubled |= {c.charge_id for c in extras}
            order = group[0].order or group[0].key
            why = "booked" if kept.charge_id in booked else "the first; none is booked"
            for extra in extras:
                n = group.index(extra) + 1
                found.append(Finding("double", extra.charge_id, extra.key,
                                     f"charge {n} of {len(group)} for {order} (kept: {kept.charge_id}, {why})",
                                     f"{refund} --charge {extra.charge_id}"))
    return doubled


def _kept(group: list[Entry], booked: set[str], booked_of: Callable[[str], str] | None) -> Entry:
    """The charge of a double that stays: the first the ledger books, else the first made. A
    line read for this window names its charge; an older line is found through the order's
    record (one GetItem per double with no line here, read only then). `booked` gains it."""
    for charge in group:
        if charge.charge_id in booked:
            return charge
    if booked_of is not None:
        for key in sorted({c.key for c in group if c.key}):
            named = booked_of(key)
            for charge in group:
                if named and charge.charge_id == named:
                    booked.add(named)
                    return charge
    return group[0]


def _booked_charge(status_of: Callable[[str], tuple[str, Mapping[str, Any]]], key: str) -> str:
    """The charge an order's record books ("" when it books none): a done record's result."""
    status, result = status_of(key)
    return str(result.get("charge_id") or "") if status == "done" else ""


def _compare_terms(line: Entry, charge: Entry, settle: str, report: WindowReport) -> None:
    """The line's amount and currency against its charge's (a line that names no currency,
    from before lines carried one, is compared on the amount only)."""
    cents = charge.cents != line.cents
    currency = bool(line.currency and charge.currency) and line.currency != charge.currency
    if not (cents or currency):
        return
    mismatch: dict[str, Any] = {"charge_id": line.charge_id, "ledger_cents": line.cents, "provider_cents": charge.cents}
    if currency:
        mismatch |= {"ledger_currency": line.currency, "provider_currency": charge.currency}
    report.amount_mismatches.append(mismatch)
    report.findings.append(Finding("amount", line.charge_id, line.key,
                                   f"ledger {line.cents} {line.currency or 'cents'}, "
                                   f"provider {charge.cents} {charge.currency or 'cents'}", _settle_one(settle, line)))


def _account_problem(line: Entry, charge: Entry, customer_of: Callable[[str], str | None] | None) -> str:
    """Why the line's account is not its charge's payer, or "": the account's mapped customer
    (the trusted source of who pays) must be the charge's customer, and the account the charge
    names (metadata `idem_account`, when it names one) the line's."""
    if customer_of is None:
        return ""
    problems = []
    expected = customer_of(line.account)
    if expected is None:
        problems.append(f"account {line.account} has no linked customer (account#{line.account}); "
                        f"the charge went to {charge.customer or 'no customer'}")
    elif expected != charge.customer:
        problems.append(f"booked to {line.account}, whose customer is {expected}; "
                        f"the charge went to {charge.customer or 'no customer'}")
    if charge.account and charge.account != line.account and charge.account != charge.customer:
        problems.append(f"the charge names account {charge.account}, the line {line.account}")
    return "; ".join(problems)


def _asked_other(upload: UploadSeen, key: str, terms: tuple[int, str] | None, cents: int, currency: str,
                 charge_id: str, settle: str) -> list[Finding]:
    """An upload of a booked order asking another amount (or currency, when both name one) than was charged:
    the handler refused it (docs/money_contract.md 2), and no later attempt settles it: one for a person."""
    if terms is None or (terms[0] == cents and not (terms[1] and currency and terms[1] != currency)):
        return []
    return [Finding("needs_attention", upload.uri, key,
                    f"this upload asks {terms[0]} {terms[1] or '(no currency)'}; the order was charged {cents} "
                    f"{currency or 'cents'} ({charge_id}): refund or charge the difference by hand",
                    f"{settle} --key {key}")]


def _pending_detail(charge_id: str, charged: Mapping[str, Entry]) -> str:
    """A pending record's charge as Stripe holds it now: still unsettled, settled (money taken, its event not
    booked yet), or not among the charges read in which money moved (failed, canceled, or made before the
    window: `idem settle` reads it at Stripe, and releases the order if no money moved)."""
    charge = charged.get(charge_id)
    if charge is None:
        return f"recorded pending with charge {charge_id}; no charge of it in which money moved was read " \
               "(failed or canceled, or made before this window): settle reads it at Stripe"
    if charge.status in UNSETTLED:
        return f"charge {charge_id} not settled yet (Stripe: {charge.status})"
    return f"recorded pending with charge {charge_id}; Stripe: {charge.status or 'settled'} (its event not booked yet)"


def _settle_one(settle: str, entry: Entry) -> str:
    """The settle command for an entry: by its order's key, else by the charge's id."""
    return f"{settle} --key {entry.key}" if entry.key else f"{settle} --charge {entry.charge_id}"


def stale_findings(stale: list[Entry], intent_of: Callable[[str], Entry | None], at: float,
                   settle: str) -> list[Finding]:
    """Records still `pending` past STALE_PENDING_SECONDS (oldest first), each against its PaymentIntent now:
    one Stripe settled (or does not hold) is a `pending` finding; one still unsettled at Stripe agrees."""
    found = []
    for record in stale[:MAX_STALE_CHECKS]:
        intent = intent_of(record.charge_id) if record.charge_id else None
        status = intent.status if intent is not None else "no such PaymentIntent"
        if status in UNSETTLED:
            continue
        days = (at - record.at) / 86400
        found.append(Finding("pending", record.charge_id or record.key, record.key,
                             f"pending in the ledger {days:.1f} days after its charge {record.charge_id or '?'}; "
                             f"Stripe: {status} (its settling event never reached the ledger)",
                             f"{settle} --key {record.key}"))
    if len(stale) > MAX_STALE_CHECKS:
        found.append(Finding("pending", f"{len(stale) - MAX_STALE_CHECKS} more", "",
                             f"{len(stale)} records pending past {STALE_PENDING_SECONDS // 86400} days; "
                             f"the oldest {MAX_STALE_CHECKS} were checked against Stripe this window",
                             f"{settle} --key KEY (each)"))
    return found
