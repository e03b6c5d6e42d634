"""The reconciliation job: compare what arrived, what the ledger says and what the provider did.

A scheduled Lambda (or a person at a terminal) runs `reconcile(...)` over one bucket,
the ledger table and the provider's table, and gets a `Report` of four kinds of trouble:

- missing work: an object arrived, but no `done` record and no charge exist for it;
- stuck records: `in_progress` past their lease (or, for a record that keeps no lease, older
  than the longest an invocation can run, 15 minutes), nobody is coming back to finish them;
- double charges: the provider holds more than one charge for one upload (per idempotency
  key: two uploads of one name in a bucket without versioning are two orders, not a double);
- needs attention: records a handler could not finish safely, with the reason it stored;
- account mismatches: per account, the provider's charges and the ledger's entries differ
  (a charge the ledger never recorded, or an entry with no charge behind it).

Declines are reported too, as the provider's final answers, not as trouble.

It reads only (S3 ListObjectVersions, DynamoDB Scan) and uses stdlib + boto3, like the rest
of the core. Records are found with the same key the handler used:
`idempotency_key(obj, recipe)`. The `content` recipe hashes the event's sequencer, which a
listing does not show, so its records are matched by the readable `source` stored beside them.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from ..dynamo import from_item, to_item
from ..events import S3Object
from ..keys import RECIPES, describe, idempotency_key, recipe_for
from ..handlers.keyed import Record, Status
from ..ledger import booked

#: Lambda's longest timeout: an in_progress record without a lease, older than this, is stuck.
MAX_INVOCATION_SECONDS = 900

#: Recipes whose key can be rebuilt from a bucket listing (key, versionId, eTag).
LISTABLE_RECIPES = ("version", "etag_only")


@dataclass(frozen=True)
class MissingWork:
    object: str  # s3://bucket/key?versionId=...
    record: str  # the record's status, or "-" when there is none


@dataclass(frozen=True)
class StuckRecord:
    key: str
    source: str
    lease_until: float
    overdue_seconds: float


@dataclass(frozen=True)
class DoubleCharge:
    reference: str
    charge_ids: tuple[str, ...]


@dataclass(frozen=True)
class Attention:
    key: str
    source: str
    reason: str


@dataclass(frozen=True)
class AccountMismatch:
    account: str
    provider_charges: int
    provider_cents: int
    ledger_charges: int
    ledger_cents: int


@dataclass
class Report:
    bucket: str
    now: float
    objects: int = 0
    records: int = 0
    charges: int = 0
    missing: list[MissingWork] = field(default_factory=list)
    stuck: list[StuckRecord] = field(default_factory=list)
    double_charges: list[DoubleCharge] = field(default_factory=list)
    mismatches: list[AccountMismatch] = field(default_factory=list)
    attention: list[Attention] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)  # sources the provider declined: final, not trouble

    @property
    def clean(self) -> bool:
        return not (self.missing or self.stuck or self.double_charges or self.mismatches
                    or self.attention)

    def flagged_objects(self) -> set[str]:
        """Object URIs named by a finding (missing work or a double charge)."""
        return {m.object for m in self.missing} | {d.reference for d in self.double_charges}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean}

    def render(self) -> str:
        """The report as plain text, one finding a line."""
        lines = [f"reconciliation of s3://{self.bucket}: {self.objects} objects, "
                 f"{self.records} records, {self.charges} charges"]
        declined = [f"DECLINED {source}: the provider declined it (a final answer)" for source in self.declined]
        if self.clean:
            return "\n".join(lines + ["clean: every object done once, every charge on the books"] + declined)
        for m in self.missing:
            lines.append(f"MISSING  {m.object}: no done record and no charge (record: {m.record})")
        for s in self.stuck:
            lines.append(f"STUCK    {s.source or s.key}: in_progress, nobody on it for "
                         f"{s.overdue_seconds:.0f} s")
        for d in self.double_charges:
            lines.append(f"DOUBLE   {d.reference}: {len(d.charge_ids)} charges ({', '.join(d.charge_ids)})")
        for n in self.attention:
            lines.append(f"ATTENTION {n.source or n.key}: {n.reason}")
        for a in self.mismatches:
            lines.append(f"MISMATCH account {a.account}: provider {a.provider_charges} charges "
                         f"({a.provider_cents} cents), ledger {a.ledger_charges} "
                         f"({a.ledger_cents} cents)")
        return "\n".join(lines + declined)


def list_objects(s3: Any, bucket: str) -> list[S3Object]:
    """Every object version in the bucket (delete markers left out), as S3Objects."""
    found = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []):
            version = v.get("VersionId")
            if version == "null":  # an unversioned bucket, or an object from before versioning
                version = None
            found.append(S3Object(bucket=bucket, key=v["Key"], size=int(v.get("Size", 0)),
                                  etag=str(v.get("ETag", "")).strip('"'), sequencer="",
                                  version_id=version))
    return sorted(found, key=lambda o: (o.key, o.version_id or ""))


def scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    """Every item of a table, as plain values."""
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(from_item(i) or {} for i in page["Items"])
    return items


def reconcile(s3: Any, dynamodb: Any, bucket: str, ledger_table: str, provider_table: str, *,
              now: float, recipe: str = "version", operation: str = "charge") -> Report:
    """Read the bucket, the ledger and the provider, and report what does not add up. An upload
    whose file names an order (docs/one_charge_per_order.md) is matched by its order's key first, as keyed charges it."""
    _check_recipe(recipe)
    objects = list_objects(s3, bucket)
    return compare(bucket, objects, scan(dynamodb, ledger_table), scan(dynamodb, provider_table),
                   now=now, recipe=recipe, operation=operation, order_keys=order_keys(s3, objects))


def order_keys(s3: Any, objects: Iterable[S3Object]) -> dict[str, str]:
    """uri -> the order's idempotency key, for every upload whose file names an order_id."""
    from .job import UploadSeen, order_key

    found = {}
    for obj in objects:
        key = order_key(s3, UploadSeen(obj.bucket, obj.key, obj.version_id, obj.etag, 0.0), "order-id")
        if key:
            found[obj.uri] = key
    return found


def compare(bucket: str, objects: Iterable[S3Object], ledger_items: Iterable[Mapping[str, Any]],
            provider_items: Iterable[Mapping[str, Any]], *, now: float, recipe: str = "version",
            operation: str = "charge", order_keys: Mapping[str, str] | None = None) -> Report:
    """The job's logic over what was read: plain items, as `scan` returns them. `order_keys`
    (uri -> key) names the order of each upload that names one."""
    _check_recipe(recipe)
    order_keys = order_keys or {}
    objects, ledger_items = list(objects), list(ledger_items)
    records = {i["pk"]: Record.from_item(to_item(dict(i))) for i in ledger_items
               if i["pk"].startswith(f"{operation}#")}
    by_source = {r.source: r for r in records.values()}
    prefix = f"s3://{bucket}/"
    charges = [i for i in provider_items
               if i.get("kind") == "charge" and str(i.get("reference", "")).startswith(prefix)]
    report = Report(bucket=bucket, now=now, objects=len(objects), records=len(records),
                    charges=len(charges))

    by_reference: dict[str, list[str]] = defaultdict(list)
    per_upload: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in sorted(charges, key=lambda c: c["pk"]):
        by_reference[c["reference"]].append(c["pk"].removeprefix("charge#"))
        # one upload is one idempotency key; charges made without a key count per object
        per_upload[(c["reference"], c.get("idempotency_key") or "")].append(c["pk"].removeprefix("charge#"))
    for obj in objects:
        record = records.get(order_keys[obj.uri]) if obj.uri in order_keys else None
        record = record or _record_for(obj, recipe, operation, records, by_source)
        settled = record is not None and record.status in (Status.DONE, Status.DECLINED)
        # keyed tells the provider the order's object (s3://bucket/key), or the upload itself
        charged = by_reference.get(obj.uri) or (obj.uri in order_keys and by_reference.get(_name(obj.uri)))
        if not settled and not charged:
            report.missing.append(MissingWork(obj.uri, str(record.status) if record else "-"))
    for record in sorted(records.values(), key=lambda r: r.key):
        ends = _nobody_after(record)
        if record.status is Status.IN_PROGRESS and ends <= now:
            report.stuck.append(StuckRecord(record.key, record.source, ends, round(now - ends, 3)))
    for record in sorted(records.values(), key=lambda r: r.key):
        if record.status is Status.NEEDS_ATTENTION:
            reason = (record.result or {}).get("reason", "") if isinstance(record.result, dict) else ""
            report.attention.append(Attention(record.key, record.source, reason))
        elif record.status is Status.DECLINED:
            report.declined.append(record.source or record.key)
    for (reference, _), ids in sorted(per_upload.items()):
        if len(ids) > 1:
            report.double_charges.append(DoubleCharge(reference, tuple(ids)))
    report.mismatches = _mismatches(charges, ledger_items)
    return report


def _name(uri: str) -> str:
    """s3://bucket/key, without a version."""
    return uri.split("?versionId=", 1)[0]


def _nobody_after(record: Record) -> float:
    """When no invocation can still be working on an in_progress record."""
    if record.lease_until:
        return record.lease_until
    return record.created_at + MAX_INVOCATION_SECONDS if record.created_at else 0.0


def _check_recipe(recipe: str) -> None:
    if recipe not in RECIPES:
        raise ValueError(f"unknown key recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    if recipe not in LISTABLE_RECIPES + ("content",):
        raise ValueError(f"recipe {recipe!r} derives its key from the attempt, not the object: "
                         "no job can find its records; use version or content")


def _record_for(obj: S3Object, recipe: str, operation: str, records: Mapping[str, Record],
                by_source: Mapping[str, Record]) -> Record | None:
    recipe = recipe_for(obj, recipe)  # as the function keyed it: unversioned uploads by content
    if recipe in LISTABLE_RECIPES:
        return records.get(idempotency_key(obj, recipe, operation))
    # content: bucket/key#etag#sequencer; the listing knows all but the sequencer
    stem = describe(obj, "etag_only") + "#"
    matches = [r for source, r in by_source.items() if source.startswith(stem)]
    return max(matches, key=lambda r: r.status is Status.DONE, default=None)


def _mismatches(charges: Iterable[Mapping[str, Any]],
                ledger_items: Iterable[Mapping[str, Any]]) -> list[AccountMismatch]:
    """Per payer, the provider's charges against the ledger's lines. The ledger books by account;
    an account linked to a customer (its mapping item `account#ACCOUNT`, kind `customer`) is that
    customer's, else the account names its customer itself (the demo's stand-in)."""
    items: list[dict[str, Any]] = [dict(item) for item in ledger_items]
    customer_of = {str(item["account"]): str(item["customer"]) for item in items
                   if item.get("kind") == "customer" and item.get("account") and item.get("customer")}
    provider: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in charges:
        provider[c["customer"]][0] += 1
        provider[c["customer"]][1] += int(c["amount"])
    ledger: dict[str, tuple[int, int]] = {}
    names: dict[str, str] = {}
    # booked() skips a mapping item that holds no counters; the counter handlers (naive, ...) add
    # their `charges`/`cents` to the same `account#<name>` item, so those are books, not skipped
    for account, (count, cents) in booked(items).items():
        payer = customer_of.get(account, account)
        before = ledger.get(payer, (0, 0))
        ledger[payer] = (before[0] + count, before[1] + cents)
        names[payer] = account if payer == account else f"{account} ({payer})"
    found = []
    for payer in sorted(set(provider) | set(ledger)):
        theirs, ours = tuple(provider.get(payer, (0, 0))), ledger.get(payer, (0, 0))
        if theirs != ours:
            found.append(AccountMismatch(names.get(payer, payer), theirs[0], theirs[1], ours[0], ours[1]))
    return found


def scheduled_handler(event: Any, context: Any, *, env: Mapping[str, str] | None = None,
                      session: Any = None, now: float | None = None) -> dict[str, Any]:
    """A scheduled Lambda's entry point: UPLOAD_BUCKET, LEDGER_TABLE, PROVIDER_TABLE and
    KEY_RECIPE from the environment; prints the report and returns it as a dict."""
    import time

    import boto3

    env = os.environ if env is None else env
    missing = [n for n in ("UPLOAD_BUCKET", "LEDGER_TABLE", "PROVIDER_TABLE") if not env.get(n)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not set: the reconciliation job needs the "
                           "bucket and both table names in its environment")
    source = session or boto3
    report = reconcile(source.client("s3"), source.client("dynamodb"), env["UPLOAD_BUCKET"],
                       env["LEDGER_TABLE"], env["PROVIDER_TABLE"],
                       now=time.time() if now is None else now,
                       recipe=env.get("KEY_RECIPE", "version") or "version")
    print(report.render())
    return report.to_dict()
