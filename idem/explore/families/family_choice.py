"""`IDEM_CHECK_FAMILIES`: a test knob, like IDEM_CHECK_SCHEDULE_SECONDS, not a reader's option.

Set to family names (`build.DIMENSIONS`, comma-separated), the check runs only the schedules of
those families: a test that proves something about how the check runs a handler (its output
kept bounded, its exit code) rather than what the handler does need not pay for every family.
The report still counts every family (the others 0), so a check limited this way shows it; its
"holds" covers only the schedules it ran."""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

VARIABLE = "IDEM_CHECK_FAMILIES"


def chosen(found: Sequence[Any], families: Iterable[str],
           environ: Mapping[str, str] = os.environ) -> list[Any]:
    """The schedules of `found` whose family the variable names (all of them when it is unset).
    Raises ValueError naming a family that is not one of `families`."""
    wanted = {name.strip() for name in environ.get(VARIABLE, "").split(",") if name.strip()}
    if not wanted:
        return list(found)
    known = list(families)
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"{VARIABLE}: {', '.join(unknown)} is not a family of schedules; "
                         f"the families: {', '.join(known)}")
    return [s for s in found if s.dimension in wanted]
