"""An example amount for the handler to copy (keyed.py): read the order file itself.
Copy it beside keyed.py if you use it; it imports only the standard library and boto3.
"""
from __future__ import annotations

import csv
import io
from typing import Any, Protocol

from botocore.exceptions import ClientError  # type: ignore[import-untyped, unused-ignore]

COPIED = not __package__  # beside its siblings in a reader's folder (plain names), or inside idem
if COPIED:
    from keyed_dynamo import error_code
    from keyed_settings import NeedsAttention
else:
    from .keyed_dynamo import error_code  # type: ignore[import-not-found, no-redef, unused-ignore]
    from .keyed_settings import NeedsAttention  # type: ignore[import-not-found, no-redef, unused-ignore]


class ObjectRef(Protocol):
    """The exact upload to read (keyed.Upload has it)."""

    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def version_id(self) -> str | None: ...
    @property
    def etag(self) -> str: ...
    @property
    def versioned(self) -> bool: ...
    @property
    def reference(self) -> str: ...


# -- an example amount: the order file itself ---------------------------------------------------
#: The largest order file read (bytes): a bigger one is held for a person, not parsed.
ORDER_MAX_BYTES = 1_000_000


def amount_from_order_file(upload: ObjectRef, s3: Any) -> int:
    """An `amount` that reads the uploaded order: a CSV with an `amount_cents` column, charged
    as the sum of its rows. It reads the exact upload, by its VersionId (or, unversioned,
    only if the eTag still matches, IfMatch), so every retry reads the same bytes. The role
    needs s3:GetObject and s3:GetObjectVersion on the bucket. A malformed order raises
    NeedsAttention (the upload is held for a person), never a charge of a wrong amount."""
    where = ({"VersionId": upload.version_id} if upload.versioned
             else {"IfMatch": '"' + upload.etag.strip('"') + '"'} if upload.etag else {})
    try:
        body = s3.get_object(Bucket=upload.bucket, Key=upload.key, **where)["Body"].read(ORDER_MAX_BYTES + 1)
    except ClientError as error:
        if error_code(error) in ("NoSuchKey", "NoSuchVersion", "PreconditionFailed", "412"):
            raise NeedsAttention(f"the order {upload.reference} is gone or was overwritten "
                                 f"({error_code(error)}): the amount cannot be known") from None
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
