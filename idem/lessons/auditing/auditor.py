"""Chapter 07's exercise: the reconciliation query you write, checked against `idem.core.reconcile.audit`.

What the query is given, as the chapter reads it:
- `booked(world)`: what the ledger holds, one row per account: `account`, `charges`, `cents`,
  read as `reconcile` reads it (`idem.core.ledger.booked`): the counter entries of claim-first
  and robust, and keyed's ledger lines (done records that carry an account);
- `charged(world)`: what the provider charged, one row per charge: `charge_id`, `account`,
  `cents`, `upload` (the object the money was for) and `key` (the idempotency key sent, or "").

What it returns: a set of `(kind, what)` pairs, the differences between the two:
- `("no ledger line", account)`: the provider charged the account more than the ledger holds;
- `("no charge", account)`: the ledger holds more for the account than the provider charged;
- `("double charge", upload)`: the provider charged one upload more than once.

`check_query(query)` runs it on staged days that hold each kind of difference and compares
its answer with what `reconcile` reports for the same day (`expected`).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ...core import ledger
from ...core.reconcile import audit as reconcile
from . import batches
from ..answers import not_yet, unfilled
from ...sim.world import LocalWorld

KINDS = ("no ledger line", "no charge", "double charge")
Query = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Iterable[tuple[str, str]]]


def booked(world: LocalWorld) -> list[dict[str, Any]]:
    """What the ledger holds: one row per account (`idem.core.ledger.booked`, as reconcile reads it)."""
    return [{"account": account, "charges": charges, "cents": cents}
            for account, (charges, cents) in sorted(ledger.booked(world.ledger().items()).items())]


def charged(world: LocalWorld) -> list[dict[str, Any]]:
    """What the provider charged: one row per charge, oldest first."""
    return [{"charge_id": c.id, "account": c.customer, "cents": c.amount, "upload": c.reference,
             "key": c.idempotency_key} for c in world.provider().charges()]


def expected(report: reconcile.Report) -> set[tuple[str, str]]:
    """The differences `reconcile` reports, as the query's pairs."""
    found = set()
    for m in report.mismatches:
        more = (m.provider_charges, m.provider_cents) > (m.ledger_charges, m.ledger_cents)
        found.add(("no ledger line" if more else "no charge", m.account))
    found |= {("double charge", d.reference) for d in report.double_charges}
    return found


# -- the staged days ---------------------------------------------------------------------------
def clean_day(world: LocalWorld) -> None:
    """One ordinary upload: nothing differs."""
    batches.run_batch(world, batches.MESSY_BATCH[:1])


def messy_day(world: LocalWorld) -> None:
    """The chapter's day: a double charge, and charges the ledger never holds."""
    batches.run_batch(world, batches.MESSY_BATCH)


def hand_booked(world: LocalWorld) -> None:
    """An ordinary upload, and a line booked by hand for an order that was never charged."""
    batches.run_batch(world, batches.MESSY_BATCH[:1])
    world.ledger().add_entry("frank", 500)


DAYS: dict[str, Callable[[LocalWorld], None]] = {
    "a clean day": clean_day, "the chapter's day": messy_day, "a line booked by hand": hand_booked}


@dataclass
class DayResult:
    day: str
    expected: set[tuple[str, str]]
    answer: set[tuple[str, str]]
    booked: list[dict[str, Any]]
    charged: list[dict[str, Any]]
    unfilled: bool = False  # the query returned None or ...: the exercise's starting state

    @property
    def missed(self) -> set[tuple[str, str]]:
        return self.expected - self.answer

    @property
    def extra(self) -> set[tuple[str, str]]:
        return self.answer - self.expected

    @property
    def right(self) -> bool:
        return not self.missed and not self.extra


@dataclass
class QueryReport:
    days: list[DayResult] = field(default_factory=list)
    hint: str = ""  # the answer to an empty query, instead of the days

    @property
    def right(self) -> bool:
        return not self.hint and all(d.right for d in self.days)

    def explain(self) -> str:
        if self.hint:
            return self.hint
        lines = []
        for day in self.days:
            verdict = "right" if day.right else "wrong"
            lines.append(f"{day.day}: {verdict} ({len(day.expected)} difference(s) to find, "
                         f"you found {len(day.answer & day.expected)})")
        wrong = next((d for d in self.days if not d.right), None)
        if wrong is None:
            lines.append("Right: on every day your query finds what reconcile finds, and nothing else.")
            return "\n".join(lines)
        lines.append("")
        lines += [f"On {wrong.day}, missed {kind} {short(what)!r}: {why_missed(kind, what, wrong)}"
                  for kind, what in sorted(wrong.missed)][:3]
        lines += [f"On {wrong.day}, reported {kind} {short(what)!r}, which reconcile does not: "
                  f"{why_extra(kind, what, wrong)}" for kind, what in sorted(wrong.extra)][:3]
        return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") if line else line
                         for line in lines)  # each reason folded to the page


def short(what: str) -> str:
    """An upload as a person reads it: the object's key, without the bucket and the version."""
    return str(what).split("?", 1)[0].removeprefix("s3://").split("/", 1)[-1]


def _counts(day: DayResult, account: str) -> tuple[int, int]:
    ours = next((b["charges"] for b in day.booked if b["account"] == account), 0)
    theirs = sum(1 for c in day.charged if c["account"] == account)
    return theirs, ours


def why_missed(kind: str, what: str, day: DayResult) -> str:
    if kind == "double charge":
        ids = [c["charge_id"] for c in day.charged if c["upload"] == what]
        return f"charges {', '.join(ids)} are for this one upload. Which rows does your query compare?"
    theirs, ours = _counts(day, what)
    if kind == "no ledger line":
        absent = all(b["account"] != what for b in day.booked)
        hint = (f" {what} has no row in the ledger at all: which accounts does your query visit?" if absent
                else " What does your query compare for this account?")
        return f"the provider charged {what} {theirs} time(s), the ledger holds {ours}.{hint}"
    return (f"the ledger holds {ours} charge(s) for {what}, the provider made {theirs}. A line with "
            "no charge behind it is found only by reading the ledger's side too.")


def why_extra(kind: str, what: str, day: DayResult) -> str:
    if kind not in KINDS:
        return f"the kinds are {', '.join(KINDS)}."
    if kind == "double charge" and all(c["upload"] != what for c in day.charged):
        return "name the upload (the charge's `upload`), not the account."
    if kind == "double charge":
        return "that upload has one charge only."
    theirs, ours = _counts(day, what)
    return (f"the provider charged {what} {theirs} time(s) and the ledger holds {ours}: "
            + ("they agree." if theirs == ours else "the difference runs the other way."))


def run_day(name: str, query: Query) -> DayResult:
    with LocalWorld(prefix="audit") as world:
        DAYS[name](world)
        world.clock.advance(3600)
        report = reconcile.reconcile(world.s3, world.dynamodb, world.bucket, world.ledger_table,
                                     world.provider_table, now=world.clock.now())
        rows, charges = booked(world), charged(world)
        found = query([dict(r) for r in rows], [dict(c) for c in charges])
        answer = set() if unfilled(found) else {tuple(pair) for pair in found}
        return DayResult(name, expected(report), answer, rows, charges, unfilled(found))


def check_query(query: Query) -> QueryReport:
    """Run `query` on every staged day and compare it with reconcile. A query that returns None
    (or ...) on every day is the exercise's starting state: it gets a hint, not the findings."""
    report = QueryReport([run_day(name, query) for name in DAYS])
    if all(day.unfilled for day in report.days):
        report.hint = not_yet("differences returns None: return a set of (kind, account or upload) pairs")
    return report
