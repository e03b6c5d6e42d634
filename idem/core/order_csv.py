"""An example amount seam for the handler to copy (keyed.KeyedCharger's `amount`): a CSV order file
with an `amount_cents` column, charged as the sum of its rows. The workbook's tests use it with
ORDER_IDENTITY=upload; it is no part of the files a reader copies (with ORDER_IDENTITY=order-id the
order file is JSON and keyed_orders.read_order reads its amount). It imports the standard library
and the handler's keyed_orders.py.
"""
from __future__ import annotations

import csv
import io
from typing import Any

from .handlers.keyed_orders import ORDER_MAX_BYTES, Upload, read_exact
from .handlers.keyed_settings import NeedsAttention


def amount_from_order_file(upload: Upload, s3: Any) -> int:
    """An `amount` that reads the uploaded order: a CSV with an `amount_cents` column, charged
    as the sum of its rows. It reads the exact upload, by its VersionId (or, unversioned,
    only if the eTag still matches, IfMatch), so every retry reads the same bytes. The role
    needs s3:GetObject and s3:GetObjectVersion on the bucket. A malformed order raises
    NeedsAttention (the upload is held for a person), never a charge of a wrong amount.
    (With ORDER_IDENTITY=order-id the order file is JSON: `read_order` reads its amount.)"""
    body = read_exact(upload, s3)
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
