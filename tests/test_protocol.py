"""Chapter 06's protocol on one screen (idem/lessons/scribes/protocol.py) behaves as the handler to copy
does, judged by the same runs as chapter 05's fix: copies at every call, the provider down once
and for good, a crash before and after the charge. A teaching skeleton must not promise more
than it keeps."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from idem.explore import scenarios as sc
from idem.lessons.scribes import protocol
from idem.lessons.scribes.fix_check import check_fix, run_once

HANDLE = f"{Path(protocol.__file__).resolve()}:handle"


def test_the_protocol_passes_the_runs_that_judge_chapter_05s_fix():
    report = check_fix(Path(protocol.__file__))
    assert report.holds, report.explain()
    assert sum(1 for r in report.runs if r.kind == "copy") >= 4  # a copy after each of its calls


@pytest.mark.parametrize("how", ["exception", "crash"])
def test_after_the_charge_the_protocol_charges_once_as_keyed_does(how):
    mine = run_once(HANDLE, sc.Scenario("robust", "after_charge", "once", how=how))
    keyed = sc.run(sc.Scenario("keyed", "after_charge", "once", how=how))
    assert (mine.charges, mine.ledger, mine.verdict) == (keyed.charges, keyed.ledger, keyed.verdict) == (
        1, 1, "exactly_once")


def test_the_protocol_fits_on_one_screen():
    lines = inspect.getsource(protocol.handle).splitlines()
    assert len(lines) <= 40, len(lines)


def test_the_protocol_fits_the_page_width():
    """Chapter 06 shows it as the code to copy: it once had 13 lines of up to 114 characters."""
    wide = [len(line) for line in Path(protocol.__file__).read_text(encoding="utf-8").splitlines()
            if len(line) > 100]
    assert not wide, wide


def test_a_zombies_commit_is_refused_and_the_charge_is_booked_once():
    """The first invocation stalls 45 s after its charge (its 30 s lease is over); a copy takes the
    work over and commits; the zombie's fenced commit fails. One charge, one ledger entry."""
    from idem.lessons.scribes.fix_check import ENTRY
    from idem.sim.runtime import LocalLambda
    from idem.sim.world import LocalWorld

    with LocalWorld() as world:
        runtime = LocalLambda(world, {**world.env("robust"), "HANDLE_FILE": HANDLE}, timeout=30, entry=ENTRY)
        event = world.event(world.upload(sc.ORDER_KEY))
        runtime.send(event)
        runtime.during("charged", lambda: (world.clock.advance(45), runtime.send_now(event)))
        attempts = runtime.run()
        assert len(world.provider().charges()) == 1
        assert world.ledger().entry("alice") == (1, world.provider().charges()[0].amount)
        first = next(a for a in attempts if a.delivery == 1 and a.attempt == 1)
        assert "TransactionCanceled" in (first.error or "")  # the fence refused the zombie's commit
