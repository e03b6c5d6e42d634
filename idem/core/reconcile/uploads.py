"""The reconciliation's upload side: the versions S3 holds that were written in a window
(ListObjectVersions, or S3 Inventory past MAX_LISTED_VERSIONS), and the order key each upload is
charged under (as the handler keys it, docs/one_charge_per_order.md)."""
from __future__ import annotations

import calendar
import csv
import gzip
import io
import json
import time
import urllib.parse
from typing import Any

from botocore.exceptions import ClientError

from .lines import days
from .report import UploadSeen

#: The most versions one run lists with ListObjectVersions (1,000 a page: 200 requests, about
#: 20-60 s of a 300 s run). Past it the job stops listing and asks for S3 Inventory
#: (UPLOAD_INVENTORY): listing a bucket of N versions every hour costs N/1,000 LIST requests a run
#: and outgrows the function's timeout.
#: https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html (MaxKeys: 1,000)
MAX_LISTED_VERSIONS = 200_000


class TooManyVersions(RuntimeError):
    """The bucket outgrew listing: the job needs S3 Inventory (UPLOAD_INVENTORY)."""


def listed_uploads(s3: Any, bucket: str, start: float, end: float,
                   limit: int | None = None) -> list[UploadSeen]:
    """Versions written in [start, end), by ListObjectVersions over the whole bucket (delete
    markers left out). Past `limit` versions (MAX_LISTED_VERSIONS), TooManyVersions: switch to
    S3 Inventory."""
    limit = MAX_LISTED_VERSIONS if limit is None else limit
    found, seen = [], 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for v in page.get("Versions", []):
            seen += 1
            if seen > limit:
                raise TooManyVersions(
                    f"s3://{bucket} holds more than {limit:,} versions: listing it every run is too slow "
                    "and too dear; configure an S3 Inventory report (all versions, CSV, daily) and set "
                    "UPLOAD_INVENTORY=bucket/prefix/manifest-prefix on the reconciler")
            at = v["LastModified"].timestamp()
            if start <= at < end:
                version = v.get("VersionId")
                found.append(UploadSeen(bucket, v["Key"], None if version in (None, "null") else version,
                                        str(v.get("ETag", "")).strip('"'), at))
    return sorted(found, key=lambda u: (u.at, u.key))


def inventory_uploads(s3: Any, manifest_bucket: str, manifest_key: str, start: float,
                      end: float) -> list[UploadSeen]:
    """Versions written in [start, end), from an S3 Inventory report (CSV, all versions).

    The report's manifest.json names its data files (`files[].key`, gzipped CSV in the
    destination bucket, `destinationBucket` an ARN) and their columns (`fileSchema`, e.g.
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag"); keys in
    the CSV are URL-encoded. https://docs.aws.amazon.com/AmazonS3/latest/userguide/storage-inventory-location.html
    An inventory is made daily or weekly, so a window is covered only by a report made after it
    ends (`run` waits for one)."""
    manifest = json.loads(s3.get_object(Bucket=manifest_bucket, Key=manifest_key)["Body"].read())
    if manifest.get("fileFormat", "CSV") != "CSV":
        raise ValueError(f"{manifest_key}: this job reads CSV inventories, not {manifest.get('fileFormat')}")
    columns = [c.strip() for c in manifest["fileSchema"].split(",")]
    where = str(manifest.get("destinationBucket", manifest_bucket)).rsplit(":", 1)[-1]
    found = []
    # A year of 100,000 orders a day is 36.5 million rows: each file is streamed, not read whole,
    # and a row is parsed only if its line names a day the range touches (LastModifiedDate is
    # YYYY-MM-DDTHH:MM:SS.sssZ; keys are URL-encoded, so a row is one line).
    tags = tuple(f"{day}T" for day in days(start, end))
    for data in manifest["files"]:
        body = s3.get_object(Bucket=where, Key=data["key"])["Body"]
        raw = gzip.GzipFile(fileobj=body) if data["key"].endswith(".gz") else io.BytesIO(body.read())
        lines = (line for line in io.TextIOWrapper(raw, encoding="utf-8", newline="")
                 if any(tag in line for tag in tags))
        for row in csv.reader(lines):
            fields = dict(zip(columns, row))
            if fields.get("IsDeleteMarker", "false").lower() == "true":
                continue
            at = _parse_time(fields["LastModifiedDate"])
            if start <= at < end:
                version = fields.get("VersionId") or None
                found.append(UploadSeen(fields["Bucket"], urllib.parse.unquote_plus(fields["Key"]),
                                        None if version == "null" else version,
                                        fields.get("ETag", "").strip('"'), at))
    return sorted(found, key=lambda u: (u.at, u.key))


def newest_manifest(s3: Any, bucket: str, prefix: str) -> tuple[str, float] | None:
    """The newest inventory manifest under `prefix` (…/YYYY-MM-DDTHH-MMZ/manifest.json) and when
    its scan began (the folder's name), or None."""
    newest: tuple[str, float] | None = None
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if item["Key"].endswith("/manifest.json"):
                stamp = item["Key"].rsplit("/", 2)[-2]
                at = float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H-%MZ")))
                if newest is None or at > newest[1]:
                    newest = (item["Key"], at)
    return newest


def _parse_time(text: str) -> float:
    """Inventory's LastModifiedDate, `2026-11-06T21:32:00.000Z`."""
    return float(calendar.timegm(time.strptime(text.strip()[:19], "%Y-%m-%dT%H:%M:%S")))


# -- an upload's order key (as the handler keys the charge) -----------------------------------


def order_key(s3: Any, upload: UploadSeen, identity: str = "order-id") -> str:
    """The idempotency key the handler charges this upload under (docs/one_charge_per_order.md), made by the
    handler's own recipe (keyed_orders.identify, which reads the order file by its exact
    version), never a copy of it: when the handler's key changes (an account in it), so does
    this. "" when the file names no order the handler would charge (the handler parks such a
    file under its upload's key, with the reason); the "upload" identity: the per-version key."""
    return order_terms(s3, upload, identity)[0]


def order_terms(s3: Any, upload: UploadSeen, identity: str = "order-id") -> tuple[str, tuple[int, str] | None]:
    """`order_key`, and what the upload's order file asks (amount_cents, and its currency in lower case, ""
    when the file names none), read once; None when no file names an order (object-name, upload)."""
    from ..handlers.keyed_orders import Upload, identify  # the handler's own recipe

    seen = Upload(upload.bucket, upload.key, upload.version_id, upload.etag, "")
    if identity == "upload":
        return seen.idempotency_key, None
    if identity not in ("order-id", "object-name"):
        raise ValueError(f"ORDER_IDENTITY {identity!r}: the reconciliation knows order-id, object-name and upload")
    try:
        ref = identify(seen, identity, s3)
    except ClientError:  # the file cannot be read at all (denied, throttled): no key to look up
        return "", None
    if ref.problem:
        return "", None
    order = ref.order
    return ref.idempotency_key, (order.amount_cents, (order.currency or "").lower()) if order else None

