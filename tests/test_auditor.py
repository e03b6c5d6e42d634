"""Chapter 07's exercise: a reconciliation query checked against idem.core.reconcile.audit."""
from __future__ import annotations

from collections import Counter

from idem.lessons.auditing import auditor
from idem.sim.world import LocalWorld


def right(booked, charged):
    ours = {b["account"]: (b["charges"], b["cents"]) for b in booked}
    theirs: dict[str, tuple[int, int]] = {}
    for c in charged:
        n, cents = theirs.get(c["account"], (0, 0))
        theirs[c["account"]] = (n + 1, cents + c["cents"])
    found = set()
    for account in set(ours) | set(theirs):
        t, o = theirs.get(account, (0, 0)), ours.get(account, (0, 0))
        if t != o:
            found.add(("no ledger line" if t > o else "no charge", account))
    found |= {("double charge", u) for u, n in Counter(c["upload"] for c in charged).items() if n > 1}
    return found


def only_known_accounts(booked, charged):
    """Compares only the accounts the ledger knows: misses a charge for an unknown account."""
    ours = {b["account"]: b["charges"] for b in booked}
    counts = Counter(c["account"] for c in charged)
    found = {("no ledger line", a) for a, n in counts.items() if a in ours and n > ours[a]}
    found |= {("double charge", u) for u, n in Counter(c["upload"] for c in charged).items() if n > 1}
    return found


def test_the_days_hold_every_kind_of_difference():
    kinds = set()
    for name in auditor.DAYS:
        kinds |= {kind for kind, _ in auditor.run_day(name, lambda b, c: set()).expected}
    assert kinds == set(auditor.KINDS)


def test_the_right_query_agrees_with_reconcile_on_every_day():
    report = auditor.check_query(right)
    assert report.right, report.explain()
    assert report.explain().splitlines()[-1].startswith("Right")


def test_an_empty_answer_is_told_what_it_missed_and_where_to_look_not_the_rule():
    report = auditor.check_query(lambda b, c: set())
    text = report.explain()
    assert not report.right
    assert "missed double charge 'bob/order-0102.csv'" in text and "for this one upload" in text
    assert "dave has no row in the ledger at all" in text
    # a hint narrows (which rows, which accounts) without stating the solution's rule (issue 43)
    for rule in ("Group the charges", "loop over", "both sides", "per account", "per upload"):
        assert rule not in text, rule


def test_an_unanswered_query_is_told_only_what_to_return():
    said = auditor.check_query(lambda b, c: None).explain()
    assert said.startswith("No answer yet") and "set of (kind, account or upload) pairs" in said
    assert not any(word in said for word in ("Total", "per account", "per upload", "both sides"))


def test_a_query_that_skips_unknown_accounts_misses_dave_and_frank():
    report = auditor.check_query(only_known_accounts)
    wrong = [d for d in report.days if not d.right]
    assert [d.day for d in wrong] == ["the chapter's day", "a line booked by hand"]
    assert wrong[0].missed == {("no ledger line", "dave")}
    assert wrong[1].missed == {("no charge", "frank")}


def test_a_false_alarm_is_explained():
    report = auditor.check_query(lambda b, c: {("double charge", "alice")})
    assert "name the upload" in report.explain()


def test_booked_reads_counter_entries_and_keyeds_ledger_lines():
    with LocalWorld(prefix="audit-test") as world:
        auditor.clean_day(world)  # alice, through keyed: a done record that is the ledger line
        world.ledger().add_entry("frank", 500)  # a counter entry
        assert auditor.booked(world) == [{"account": "alice", "charges": 1, "cents": 500},
                                         {"account": "frank", "charges": 1, "cents": 500}]


def test_charged_rows_and_short_uploads():
    with LocalWorld(prefix="audit-test") as world:
        auditor.clean_day(world)
        (row,) = auditor.charged(world)
    assert row["account"] == "alice" and auditor.short(row["upload"]) == "alice/order-0101.csv"
