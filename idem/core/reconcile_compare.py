"""The reconciliation's comparison: a window's uploads, ledger lines and charges, read over widened
ranges, judged inside the window; each difference a `Finding` with the command that settles it."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping

from .reconcile_report import Entry, Finding, UploadSeen, WindowReport

def compare(lines: Iterable[Entry], charges: Iterable[Entry], start: float, end: float,
            uploads: Iterable[tuple[UploadSeen, str]] = (),
            status_of: Callable[[str], tuple[str, Mapping[str, Any]]] | None = None,
            settle: str = "python -m idem settle", refund: str = "python -m idem refund") -> WindowReport:
    """Lines and charges read over the widened ranges, and the window's uploads with their order
    keys; differences only inside [start, end). `status_of(key)` reads a record the lines did not
    show (declined and needs_attention records have no line)."""
    lines, charges, uploads = list(lines), list(charges), list(uploads)
    booked = {line.charge_id: line for line in lines}
    booked_keys = {line.key for line in lines}
    charged = {charge.charge_id: charge for charge in charges}
    inside = [line for line in lines if start <= line.at < end]
    made = [charge for charge in charges if start <= charge.at < end]
    report = WindowReport(start, end, uploads=len(uploads), ledger_lines=len(inside), provider_charges=len(made))
    found = report.findings

    for upload, key in uploads:
        if key and key in booked_keys:
            continue
        status, result = status_of(key) if (key and status_of) else ("", {})
        if status in ("done", "declined"):
            continue  # booked before the window (an uploader's retried PUT), or a final decline
        if status == "needs_attention":
            found.append(Finding("needs_attention", upload.uri, key, str(result.get("reason", ""))[:300],
                                 f"{settle} --key {key}"))
        elif status == "pending":  # charged, still not settled when its window is judged
            found.append(Finding("pending", upload.uri, key,
                                 f"charge {result.get('charge_id', '?')} not settled yet (Stripe: processing)",
                                 f"{settle} --key {key}"))
        elif not key:
            found.append(Finding("missing_line", upload.uri, "", "no readable order_id: no order, no charge",
                                 f"fix the file and upload it again (s3://{upload.bucket}/{upload.key})"))
        else:
            found.append(Finding("missing_line", upload.uri, key,
                                 f"no ledger line (record: {status or 'none'})", f"{settle} --key {key}"))
    # Every commit writes booked_day (keyed, `idem settle`), so a booked charge's line is in the
    # day index; a ledger's lines from before the index reach it through backfill_booked_day.
    report.unbooked = sorted((c for c in made if c.charge_id not in booked), key=lambda e: e.charge_id)
    report.uncharged = sorted((line for line in inside if line.charge_id not in charged),
                              key=lambda e: e.charge_id)
    for line in report.uncharged:
        found.append(Finding("uncharged", line.charge_id, line.key,
                             f"booked for {line.account} ({line.cents} cents); the provider has no such charge",
                             _settle_one(settle, line)))
    per_order: dict[str, list[Entry]] = defaultdict(list)
    for charge in charges:
        if charge.order or charge.key:
            per_order[charge.order or charge.key].append(charge)
    doubled = set()
    for order, group in sorted(per_order.items()):
        group.sort(key=lambda c: (c.at, c.charge_id))
        if len(group) > 1 and start <= group[-1].at < end:  # reported in the window of its last charge
            doubled |= {c.charge_id for c in group[1:]}
            for n, extra in enumerate(group[1:], start=2):
                found.append(Finding("double", extra.charge_id, extra.key,
                                     f"charge {n} of {len(group)} for {order} (the first: {group[0].charge_id})",
                                     f"{refund} --charge {extra.charge_id}"))
    for charge in report.unbooked:
        if charge.charge_id in doubled:
            continue  # a second charge has no line by design: refunding it is the fix
        found.append(Finding("unbooked", charge.charge_id, charge.key,
                             f"{charge.cents} cents from {charge.account}, on no ledger line",
                             _settle_one(settle, charge)))
    for line in sorted(inside, key=lambda e: e.charge_id):
        same = charged.get(line.charge_id)
        if same is not None and same.cents != line.cents:
            report.amount_mismatches.append({"charge_id": line.charge_id, "ledger_cents": line.cents,
                                             "provider_cents": same.cents})
            found.append(Finding("amount", line.charge_id, line.key,
                                 f"ledger {line.cents} cents, provider {same.cents}",
                                 _settle_one(settle, line)))
    return report


def _settle_one(settle: str, entry: Entry) -> str:
    """The settle command for an entry: by its order's key, else by the charge's id."""
    return f"{settle} --key {entry.key}" if entry.key else f"{settle} --charge {entry.charge_id}"

