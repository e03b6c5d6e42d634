"""Views for the readers' own answers: a fix of robust's concurrent hole (chapter 05) and a
reconciliation query (chapter 07), each as one short table."""
from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

from ..lessons.auditing.auditor import short


def fix_frame(report: Any) -> pd.DataFrame | None:
    """A fix's runs (idem.lessons.scribes.fix_check.FixReport), one row each: what happened, what it left.
    Nothing while the handler is still the one the chapter gives: its runs are the question's."""
    return None if report.unchanged else pd.DataFrame(report.rows())


def booked_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """What the ledger holds, one row per account (idem.lessons.auditing.auditor.booked)."""
    return pd.DataFrame(list(rows), columns=["account", "charges", "cents"]).rename(
        columns={"charges": "charges in the ledger", "cents": "cents in the ledger"})


def charged_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """What the provider charged, one row per charge (idem.lessons.auditing.auditor.charged); the upload
    is shown by its object key, the key sent by whether there was one."""
    frame = pd.DataFrame(list(rows), columns=["charge_id", "account", "cents", "upload", "key"])
    frame["upload"] = frame["upload"].map(short)
    frame["key"] = frame["key"].map(lambda k: "yes" if k else "no")
    return frame.rename(columns={"key": "key sent"})
