"""A mutation score for `idem check`: mutants of keyed (idem/core/handlers/keyed.py), each made
from a copy of the file by a textual replacement that fails loudly when its pattern is gone (so a
rewrite of keyed cannot silently turn a mutant into keyed itself). Each mutant is caught (the
check breaks) or the test says why the check cannot or need not catch it."""
from __future__ import annotations

from pathlib import Path

import pytest

from idem.explore.check import CheckInputError, check_handler

KEYED = Path(__file__).resolve().parent.parent / "idem" / "core" / "handlers" / "keyed.py"

#: name -> (pattern in keyed.py, its replacement, retries to try, a verdict the check must give)
CAUGHT = {
    "fresh key per attempt": (
        "reference=upload.reference,\n                                          idempotency_key=key)",
        "reference=upload.reference,\n                                          idempotency_key=uuid.uuid4().hex)",
        (0,), "double_charge"),
    "no key at all": (
        "reference=upload.reference,\n                                          idempotency_key=key)",
        "reference=upload.reference)",
        (0,), "double_charge"),
    "errors swallowed": (
        "            self.ledger.release(key, owner)\n            raise\n",
        "            self.ledger.release(key, owner)\n            return {\"status\": \"failed\"}\n",
        (0,), "silent_loss"),
    "failures not raised": (
        "    if len(failures) == 1 and not batch.malformed:\n        raise failures[0]\n"
        "    if failures or batch.malformed:\n",
        "    if failures and False:\n        raise failures[0]\n    if batch.malformed:\n",
        (0,), "silent_loss"),
}

#: Mutants this check does not catch, and why (each still applied, so its pattern is held).
NOT_CAUGHT = {
    # The claim's lease is never reached by the schedules: no time passes inside an invocation,
    # so a lease that is too short, or none at all, never lets a copy in while the owner works.
    # The provider key makes the copy's charge a replay anyway, and the fence keeps one commit:
    # with the key in place these are equivalent for money; a slow-call dimension would catch them.
    "no lease (a copy takes over at once)": (
        " OR (#s = :in_progress AND lease_until <= :now)",
        " OR (#s = :in_progress)", "double_charge"),
    "lease shorter than the work": (
        "lease_until = self.now() + remaining_ms / 1000",
        "lease_until = self.now() + 1", "double_charge"),
    # The fence guards a commit by an owner whose lease ran out: unreachable without a lease
    # that runs out mid-invocation (see above); with the provider key the zombie books the same
    # charge id, so the books still agree.
    "fence removed": (
        'ConditionExpression="#o = :me AND #s = :in_progress",  # the fence: only the owner',
        'ConditionExpression="(#o = :me OR #o <> :me) AND (#s = :in_progress OR #s <> :in_progress)",',
        "double_charge"),
    # Two uploads of one name never share a schedule here: a key without the version cannot
    # collide with another upload's.
    "key without the version": (
        'return f"{self.bucket}/{self.key}#{self.version_id}"',
        'return f"{self.bucket}/{self.key}"', "silent_loss"),
}


def mutant(tmp_path: Path, name: str, old: str, new: str) -> str:
    text = KEYED.read_text()
    assert text.count(old) == 1, f"mutant {name!r}: keyed.py no longer contains {old!r}; rewrite the mutant"
    path = tmp_path / f"mutant_{abs(hash(name)) % 10_000}.py"
    path.write_text(text.replace(old, new))
    return f"{path}:lambda_handler"


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_the_check_catches_keyeds_mutant(tmp_path, name):
    old, new, retries, verdict = CAUGHT[name]
    report = check_handler(mutant(tmp_path, name, old, new), retries=retries, workers=1)
    assert not report.holds and report.tally().get(verdict, 0) > 0, report.tally()


@pytest.mark.parametrize("name", sorted(NOT_CAUGHT))
def test_pins_gap_mutants_the_schedules_cannot_reach_still_hold(tmp_path, name):
    old, new, _ = NOT_CAUGHT[name]
    report = check_handler(mutant(tmp_path, name, old, new), retries=(0,), workers=1)
    assert report.holds, report.explain()  # the gap, pinned: when this fails, move it to CAUGHT


def test_a_mutant_that_never_books_is_refused_when_the_books_are_named(tmp_path):
    """Books left out altogether: the clean run books nothing, so by default the report says the
    books were NOT judged (and the money alone holds); named explicitly, they must be there."""
    target = mutant(tmp_path, "books never written",
                    "            self.ledger.commit(claimed, result, upload.account, cents, charge_id)\n",
                    "            pass\n")
    assert "NOT judged" in check_handler(target, retries=(0,), workers=1).books_judged()
    with pytest.raises(CheckInputError, match="booked no ledger line"):
        check_handler(target, retries=(0,), workers=1, books="LEDGER_TABLE:charge_id")
