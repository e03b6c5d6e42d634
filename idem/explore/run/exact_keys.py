"""`--object FILE=KEY`: the reader's file lands at KEY exactly, and schedules are kept apart by
starting each from an empty account instead of by a name of its own.

A function may use the key as a path, filter by a prefix, or name its outputs after it; a key the
check rewrote (`incoming/check00042/a.json`) would not be the key it is written for. So with a KEY
given, every schedule's upload is at KEY itself. Two schedules at one name in one account would
see each other's objects and items (a conditional put refused because an earlier schedule made
the item, an output object already there), so each schedule, and each of the clean runs the
check compares, runs alone: the local AWS is emptied (moto's every service), the template's
resources and the --setup function are made again, and a fresh world is made for it. That costs
a world per schedule (about 0.12 s each on moto, measured here), paid only with an exact KEY;
`--object FILE` without a KEY keeps one folder `checkNNNNN/` per schedule and shared worlds.

What the check adds to names besides KEY, each named in its schedule's label or here: the SQS
batch's neighbour is KEY's name with `-2` (`a-2.json`), the family `names` takes KEY's folder and
extension with a file name that needs decoding (`idem.explore.families.key_decoding`), and another account's
copy (the family `accounts`) is under that account's own folder.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

#: What makes the account's resources again after it is emptied (the template's, --setup's).
_remake: list[Callable[[], None]] = []


def on_fresh_account(remake: Callable[[], None]) -> None:
    """Call `remake` each time the account is emptied (the template's resources, --setup)."""
    _remake.append(remake)


def install(runner: Any) -> None:
    """From now on in this process, while an --object has an exact KEY (`objects.EXACT`), `runner.run_batch` runs each schedule alone, in
    an emptied account and a fresh world (see the module)."""
    real = getattr(runner.run_batch, "_real", runner.run_batch)

    @functools.wraps(real)
    def one_at_a_time(target: Any, schedules: Any, baseline: Any, effects: Any, provider_factory: str,
                      first: Any = 0, *rest: Any, **options: Any) -> list[Any]:
        from . import objects

        if not objects.EXACT:
            return real(target, schedules, baseline, effects, provider_factory, first, *rest, **options)
        numbers = range(first, first + len(schedules)) if isinstance(first, int) else first
        results = []
        for schedule, number in zip(schedules, numbers):
            empty_account()
            results += real(target, [schedule], baseline, effects, provider_factory, [number], *rest, **options)
        return results

    one_at_a_time._real = real  # type: ignore[attr-defined]
    runner.run_batch = one_at_a_time


def empty_account() -> None:
    """Empty the check's local AWS and make the account's resources again, with no world kept."""
    from ...sim import world as sim_world
    from . import worlds

    worlds._kept.clear()  # its resources go with the reset: no calls to delete them one by one
    sim_world.ensure_moto()
    sim_world._mock.reset()  # every moto backend: what an earlier schedule left is gone
    for remake in _remake:
        remake()
