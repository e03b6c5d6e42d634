"""The books judged per charge, not by counting the items that carry a charge id.

A ledger line is an item of the books' table that carries the charge's id (`--books
TABLE_ENV:ATTRIBUTE`). A handler often keeps the charge id elsewhere in the same table as well: its
done record keeps its result (the charge it made), as Powertools' idempotency records keep the
function's response. Both carry the id of ONE charge; counting them gives "2 ledger lines for 1
charge" on a correct handler's clean run. So items are grouped by the charge they name, and within a
charge by their shape (the names of their attributes): a record and a line are two shapes, one line
each; two items of one shape (a second line for the same charge, under another key) are two lines.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..sim.world import pk_text


def lines(items: Iterable[dict[str, Any]], attribute: str) -> list[str]:
    """The key (`pk`) of each ledger line among `items`, each of which carries `attribute`: per
    charge, the items of its most numerous shape (ties: the shape named first in sorted order)."""
    by_charge: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for item in items:
        charge = json.dumps(item[attribute], sort_keys=True, default=str)
        shape = tuple(sorted(item))
        by_charge.setdefault(charge, {}).setdefault(shape, []).append(pk_text(item["pk"]))
    return [pk for shapes in by_charge.values()
            for pk in sorted(shapes.items(), key=lambda s: (-len(s[1]), s[0]))[0][1]]
