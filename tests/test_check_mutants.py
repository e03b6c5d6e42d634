"""A mutation score for `idem check`: mutants of keyed (idem/core/handlers/keyed.py and the siblings
it imports, keyed_*.py), each made from a copy of the files by a textual replacement in the one
file that holds its pattern, failing loudly when the pattern is gone (so a rewrite of keyed cannot
silently turn a mutant into keyed itself). The copy runs as a reader's copy does: the files side
by side in one folder, that folder on sys.path, the siblings imported by their plain names. Each
mutant is caught (the check breaks, on the family of schedules named beside it, run alone) or the
test says why the check cannot or need not catch it (those run on every family)."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from idem.explore.check import check_handler
from idem.explore.errors import CheckInputError
from idem.explore.families import family_choice
from idem.sim.faults import Boundary

HANDLERS = Path(__file__).resolve().parent.parent / "idem" / "core" / "handlers"
KEYED = HANDLERS / "keyed.py"
#: keyed.py and the siblings it imports (docs/one_charge_per_order.md: the handler to copy).
FILES = sorted(HANDLERS.glob("keyed*.py"))

#: name -> (pattern in keyed.py or a sibling, its replacement, retries to try, a verdict the check must
#: give, and the family of schedules that must give it: the mutant is checked on that family alone)
CAUGHT = {
    "fresh key per attempt": (
        "idempotency_key=claimed.key, metadata=metadata,",
        "idempotency_key=uuid.uuid4().hex, metadata=metadata,",
        (0,), "double_charge", "again"),
    "no key at all": (
        "idempotency_key=claimed.key, metadata=metadata,",
        "metadata=metadata,",
        (0,), "double_charge", "again"),
    "errors swallowed": (
        "            self.ledger.release(claimed)\n            raise\n",
        "            self.ledger.release(claimed)\n            return {\"status\": \"failed\"}\n",
        (0,), "silent_loss", "runs"),
    "failures not raised": (
        "    if len(failures) == 1 and not batch.malformed:\n        raise failures[0]\n"
        "    if failures or batch.malformed:\n",
        "    if failures and False:\n        raise failures[0]\n    if batch.malformed:\n",
        (0,), "silent_loss", "runs"),
    # Two orders at one name in one schedule (the overwrite dimension): keyed by the name instead
    # of the order the file names, the second order's key is the first's, so it is turned away as
    # a duplicate and never charged.
    "key without the order id (the name instead)": (
        "OrderRef(order_key(upload.account, order.order_id),",
        'OrderRef(_order_key("order", f"{upload.bucket}\\n{upload.key}"),', (0,), "silent_loss", "overwrite"),
    # Two accounts' order "1001" (the accounts family): keyed by the order id alone, the second
    # account's order is the first's key, turned away as a duplicate and never charged.
    "key without the account": (
        'return _order_key("order", f"{account}\\n{order_id}")',
        'return _order_key("order", order_id)', (0,), "silent_loss", "accounts"),
    # The order file read at the name's latest bytes, not this upload's: a second order landing
    # before the first invocation reads its file is read (and charged) in its place, twice over
    # its own key, and the first order is never charged.
    "order read at the latest version, not the event's": (
        'where = {"VersionId": upload.version_id} if upload.versioned else',
        "where = {} if upload.versioned else", (0,), "silent_loss", "overwrite"),
    "order read without IfMatch (unversioned bucket)": (
        """else {"IfMatch": '"' + upload.etag.strip('"') + '"'}""",
        "else {}", (0,), "silent_loss", "overwrite"),
}

#: Mutants that are equivalent to keyed for money and books, each with why (each still applied, so
#: its pattern is held, and checked: the schedules must reach what the mutant changes).
#: The argument, for the first two. keyed passes the claim's key to the provider, so every charge
#: any invocation makes for one order is the same charge (Stripe replays it; a request while the
#: key is in flight gets 409 and charges nothing); a takeover keeps the record's first_attempt_at
#: and payment_method (keyed.KeyedLedger._take_over: `replace(old, ...)`), so the copy sends the
#: same parameters with that key and searches Stripe by key at the same age; and the ledger line is
#: the claim's own item (one partition key per order), so there is at most one line. A copy that
#: takes the claim over early (no lease, or a lease that runs out while the first invocation's
#: call is in flight) therefore either books that same charge on that same item, or gets 409,
#: releases and fails, and its event is retried or lands in the failure queue (needs_attention).
#: Money and books agree, or something alerts. The slow schedules do reach the takeover (below).
#: The takeover's fence reads the owner, the status and the lease. The lease is redundant: owners
#: are fresh (uuid4 per invocation) and every takeover writes a new one, so an unchanged owner and
#: status mean nobody took over since the read; the only writes that change an owned record's
#: lease are the owner's own release (lease_until = now, earlier still: the lease has still run
#: out) and its own put re-sent after a lost answer (the same lease). A fence on owner and status
#: alone admits exactly the takeovers keyed admits.
#: The commit's fence guards a commit by an owner whose lease ran out. keyed's lease ends at the
#: invocation's own deadline, when Lambda stops the invocation: the owner is never a zombie, so
#: the fenced commit cannot fail for that reason in any schedule on one clock; had it been a
#: zombie, it would write the same charge id on the same item. tests/handlers/short_lease.py is
#: what a lease shorter than the work does to books kept as separate lines without a fence: the
#: slow schedules break it.
#: Gone since the merge: "a TTL shorter than the timeout". A claim carries no expires_at any more
#: (docs/money_contract.md: only a run-out lease lets a takeover happen), so RECORD_TTL_SECONDS
#: reached no item keyed writes: that mutant changed nothing a schedule could run (and keyed no
#: longer reads RECORD_TTL_SECONDS at all: tests/test_handler_lifetimes.py).
NOT_CAUGHT = {
    "no lease (a copy takes over at once)": (
        "if (existing.status is Status.IN_PROGRESS and existing.lease_until <= now) \\\n",
        "if existing.status is Status.IN_PROGRESS \\\n", True),
    "lease shorter than the work": (
        "lease_until = self.now() + remaining_ms / 1000",
        "lease_until = self.now() + 1", True),
    "takeover fenced on the owner and status only (the lease read dropped)": (
        '"#o = :old AND lease_until = :lease AND #s = :was"',
        '"#o = :old AND (lease_until = :lease OR lease_until <> :lease) AND #s = :was"', False),
    "fence removed": (
        'Item=line, ConditionExpression=FENCE,',
        'Item=line, ConditionExpression="(#o = :me OR #o <> :me) AND (#s = :in_progress OR #s <> :in_progress)",',
        False),
}


@pytest.fixture(autouse=True)
def _plain_siblings(monkeypatch):
    """Each mutant's copy imports its own siblings: none of another copy's left in sys.modules."""
    def forget() -> None:
        for name in [m for m in sys.modules if m == "keyed" or m.startswith("keyed_")]:
            del sys.modules[name]
    forget()
    yield
    forget()


def mutant(tmp_path: Path, name: str, old: str, new: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """keyed and its siblings copied into a folder of their own, `old` replaced by `new` in the one
    file that holds it; the folder first on sys.path (as Lambda's task root is)."""
    holding = [f for f in FILES if old in f.read_text()]
    assert len(holding) == 1 and holding[0].read_text().count(old) == 1, \
        f"mutant {name!r}: keyed.py and its siblings no longer hold {old!r} exactly once; rewrite the mutant"
    folder = tmp_path / f"mutant_{abs(hash(name)) % 10_000}"
    folder.mkdir()
    for f in FILES:
        shutil.copy(f, folder / f.name)
    (folder / holding[0].name).write_text(holding[0].read_text().replace(old, new))
    monkeypatch.syspath_prepend(str(folder))
    return f"{folder / KEYED.name}:lambda_handler"


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_the_check_catches_keyeds_mutant(tmp_path, monkeypatch, name):
    old, new, retries, verdict, family = CAUGHT[name]
    monkeypatch.setenv(family_choice.VARIABLE, family)  # the family that must catch it, alone
    report = check_handler(mutant(tmp_path, name, old, new, monkeypatch), retries=retries, workers=1)
    assert not report.holds and report.tally().get(verdict, 0) > 0, report.tally()
    assert {r.schedule.dimension for r in report.results} == {family}


@pytest.mark.parametrize("name", sorted(NOT_CAUGHT))
def test_equivalent_mutants_hold_and_the_schedules_reach_the_takeover(tmp_path, monkeypatch, name):
    old, new, takes_over = NOT_CAUGHT[name]
    report = check_handler(mutant(tmp_path, name, old, new, monkeypatch), retries=(0,), workers=1)
    assert report.holds, report.explain()  # equivalent for money and books: see the argument above
    slow = [r for r in report.results if r.schedule.slow]
    superseded = [r for r in slow if any(p.get("status") == "superseded" for a in r.attempts
                                         for p in (a.result or {}).get("processed", []))]
    # a copy took the claim over while the first invocation's call was in flight (the first one
    # then lost ownership at its commit), or, with keyed's lease, never could
    assert bool(superseded) is takes_over, [r.schedule.label() for r in superseded]


def test_a_mutant_that_never_books_is_refused_when_the_books_are_named(tmp_path, monkeypatch):
    """Books left out altogether: the clean run books nothing, so by default the report says the
    books were NOT judged (and the money alone holds); named explicitly, they must be there."""
    target = mutant(tmp_path, "books never written",
                    "            self.ledger.commit(claimed, result, upload.account, cents, charge_id,\n"
                    "                               Status.PENDING if status == PENDING else Status.DONE, customer, currency)\n",
                    "            pass\n", monkeypatch)
    monkeypatch.setenv(family_choice.VARIABLE, "uploads")  # what the clean run booked decides both
    assert "NOT judged" in check_handler(target, retries=(0,), workers=1).books_judged()
    with pytest.raises(CheckInputError, match="booked no ledger line"):
        check_handler(target, retries=(0,), workers=1, books="LEDGER_TABLE:charge_id")


def caught_in_the_second_round(target: str, monkeypatch: pytest.MonkeyPatch, families: str, verdict: str,
                               **options: str) -> list:
    """The check of `target` on `families`, retries 0: its results with `verdict`, asserted to be there and to be
    the second round's alone (every break of the mutant is a schedule of the family second_fault)."""
    monkeypatch.setenv(family_choice.VARIABLE, families)
    report = check_handler(target, retries=(0,), workers=1, **options)
    found = [r for r in report.broken if r.verdict == verdict]
    assert found and {r.schedule.dimension for r in report.broken} == {"second_fault"}, report.tally()
    return found


@pytest.mark.parametrize("trigger", ["s3", "sqs"])
def test_a_look_up_read_as_no_charge_when_it_fails_is_caught_in_the_second_round(tmp_path, monkeypatch, trigger):
    """keyed looks its charge up once the order's key may be forgotten (an order charged, never booked,
    redriven a day later: the family `again`), and parks the order when the look-up fails. This mutant
    takes a failed look-up for "no charge" and charges again under the forgotten key. The look-up is made
    only after a fault, so only the second round fails it (docs/reliability.md, "an error is not an
    answer"): before the look-up was a boundary the check never failed it, and the mutant held."""
    target = mutant(tmp_path, "look-up failing open",
                    "    except Exception as unavailable:  # never charge blind: park it for a person\n",
                    "    except Exception:  # the mutant: a failed look-up read as no charge\n"
                    "        return []\n"
                    "    except BaseException as unavailable:\n", monkeypatch)
    twice = caught_in_the_second_round(target, monkeypatch, "again,second_fault", "double_charge", trigger=trigger)
    # each where the look-up failed; the redrive (of the failure queue, of SQS's dead-letter queue) made it
    # after the plan's outage was over (FaultPlan.over)
    assert all(r.schedule.fault.also.at.call == "provider:find_charges" and r.schedule.later.kind == "again"
               for r in twice), [r.schedule.label() for r in twice]


#: keyed's mutant that counts a park whose write failed as parked (needs_attention, for the alarm) and returns
#: success, the upload not failed: the order is neither charged, parked nor in the failure queue
FAILED_PARK = (
    "            counts[log_outcome(request_id, named, error)] += 1\n            failures.append(error)\n",
    "            counts[log_outcome(request_id, named, error)] += 1\n"
    "            if \"while parking\" in str(getattr(error, \"__notes__\", \"\")):\n"
    "                continue  # the mutant: counted needs_attention, so the alarm has it; not failed\n"
    "            failures.append(error)\n")


@pytest.mark.parametrize("trigger", ["s3", "sqs"])
def test_a_failed_park_counted_as_parked_is_caught_without_a_first_fault(tmp_path, monkeypatch, trigger):
    """keyed parks an order it will not charge (a second order at one name whose file it cannot read as the
    event's, another account's customer named in the file) and fails the upload, so the failure queue holds it.
    This mutant counts a park whose write failed as parked (needs_attention, for the alarm) and returns success:
    the order is neither charged, parked nor in the failure queue. The park is a call no clean run makes, reached
    by schedules with no fault at all (the families overwrite and accounts); only the second round fails it
    (docs/reliability.md, "an error is not an answer"). Before it ran fault-free schedules, the mutant held."""
    target = mutant(tmp_path, "failed park counted as parked", *FAILED_PARK, monkeypatch)
    lost = caught_in_the_second_round(target, monkeypatch, "overwrite,accounts,second_fault", "silent_loss",
                                      trigger=trigger)
    # each with no first fault, the park (an UpdateItem) failing on its first arrival
    assert all(r.schedule.fault.at is None and r.schedule.fault.also.at.call == "dynamodb:UpdateItem"
               for r in lost), [r.schedule.label() for r in lost]


@pytest.mark.parametrize("trigger", ["s3", "sqs"])
def test_a_file_that_chooses_who_pays_is_caught_on_either_trigger(tmp_path, monkeypatch, trigger):
    """"The file never chooses who pays" (docs/money_contract.md, 2): keyed charges the account's linked customer
    and parks a file that names another. This mutant lets the file's `customer` win, so Bob's file naming Alice's
    customer charges Alice. The family accounts uploads such a file for a function that reads the mapping; before,
    it did so only on S3, and under --trigger sqs the mutant held."""
    target = mutant(tmp_path, "the file chooses who pays",
                    "    named = ref.order.customer if ref.order else None\n    if named and named != linked:\n",
                    "    named = ref.order.customer if ref.order else None\n"
                    "    if named:\n        return named  # the mutant: the uploader's file chooses who pays\n"
                    "    if named and named != linked:\n", monkeypatch)
    monkeypatch.setenv(family_choice.VARIABLE, "accounts")
    report = check_handler(target, retries=(0,), workers=1, trigger=trigger)
    wrong = [r for r in report.broken if r.schedule.later.how == "names_customer"]
    assert wrong and len(wrong) == len(report.broken), report.tally()


def test_a_failed_park_at_a_boundary_the_clean_run_crossed_in_another_role_is_caught(tmp_path, monkeypatch):
    """Over Stripe's SDK keyed's clean run makes an UpdateItem before its charge (it keeps the customer's saved
    payment method on the claim). The park of Bob's file naming Alice's customer is an UpdateItem at that same
    boundary, another request: a call the clean run never made, though its boundary's name is the clean run's.
    A boundary named by its call and number alone hid it, and the failed-park mutant held; a call is named by
    what it asks too (its expressions and attribute names: idem.sim.platform.call_roles)."""
    target = mutant(tmp_path, "failed park counted as parked", *FAILED_PARK, monkeypatch)
    lost = caught_in_the_second_round(target, monkeypatch, "accounts,second_fault", "silent_loss", provider="stripe")
    assert all(r.schedule.fault.at is None and r.schedule.fault.also.at == Boundary("dynamodb:UpdateItem")
               and r.schedule.fault.also.role for r in lost), [r.schedule.label() for r in lost]
