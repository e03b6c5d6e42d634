"""What became of one upload, in one word: the verdicts, and the two rules that give them.

The scenario matrix knows the workbook's own books (the ledger, the record's status), so it
judges by those (`judge_run`). `idem check` knows nothing of a handler's books, only its
effects: the provider's charges and any AWS call named as an effect, each compared with
what a clean run did (`judge_effects`). The first rule that matches wins in both.
"""
from __future__ import annotations

from enum import Enum
from typing import Collection, Mapping, Sequence


class Verdict(str, Enum):
    DOUBLE_CHARGE = "double_charge"  # money moved twice or more for one upload
    DOUBLE_EFFECT = "double_effect"  # another effect happened more often than once (check only)
    EXACTLY_ONCE = "exactly_once"  # done once, and the books agree
    NEEDS_ATTENTION = "needs_attention"  # done once but unfinished, and something alerts
    SILENT_MISMATCH = "silent_mismatch"  # done once but unfinished, and nothing alerts
    FAILED_VISIBLY = "failed_visibly"  # not done, and the failure queue holds the event
    SILENT_LOSS = "silent_loss"  # not done, and nothing alerts
    DECLINED = "declined"  # the provider declined: a final answer, recorded, no money moved

    def __str__(self) -> str:
        return self.value


#: The matrix's verdicts, in the order its tables show them.
MATRIX_VERDICTS = tuple(v.value for v in Verdict if v not in (Verdict.DOUBLE_EFFECT, Verdict.DECLINED))
#: With the provider's own outcomes (a decline among them), one more verdict can happen.
PROVIDER_VERDICTS = MATRIX_VERDICTS + (Verdict.DECLINED.value,)
#: Outcomes that break a handler: money or an effect twice, or work lost or half-done silently.
BREAKS = tuple(v.value for v in (Verdict.DOUBLE_CHARGE, Verdict.DOUBLE_EFFECT,
                                 Verdict.SILENT_MISMATCH, Verdict.SILENT_LOSS))
#: What `keyed` may end in: done once, or visibly not done.
KEYED_OK = tuple(v.value for v in (Verdict.EXACTLY_ONCE, Verdict.NEEDS_ATTENTION,
                                   Verdict.FAILED_VISIBLY, Verdict.DECLINED))


def completed(charges: int, entries: int, record: str, has_done_state: bool) -> bool:
    """The operation finished: money moved, the books agree with the provider, and the record,
    for a pattern that has a `done` state, says done."""
    return charges >= 1 and entries == charges and (record == "done" or not has_done_state)


def judge_run(charges: int, completed: bool, dlq: int, record: str) -> str:
    """The matrix's verdict, from the provider's charges and the workbook's own books."""
    if charges >= 2:
        return Verdict.DOUBLE_CHARGE.value
    if charges == 1 and completed:
        return Verdict.EXACTLY_ONCE.value
    if charges == 1:
        # an in_progress record is what the reconciliation job flags
        alerted = dlq or record == "in_progress"
        return (Verdict.NEEDS_ATTENTION if alerted else Verdict.SILENT_MISMATCH).value
    if record == Verdict.DECLINED.value and not dlq:
        return Verdict.DECLINED.value  # the record keeps the provider's final answer
    return (Verdict.FAILED_VISIBLY if dlq else Verdict.SILENT_LOSS).value


def judge_effects(effects: Mapping[str, int], baseline: Mapping[str, int], dlq: int,
                  money: str = "provider:charge", declined: bool = False) -> str:
    """The check's verdict: each effect against what the clean run did (every effect once).
    `declined`: the provider declined the charge, so no money and no alarm is its final answer."""
    expected = {name: n for name, n in baseline.items() if n}
    if any(effects.get(name, 0) > n for name, n in expected.items()):
        doubled_money = effects.get(money, 0) > expected.get(money, 0)
        return (Verdict.DOUBLE_CHARGE if doubled_money else Verdict.DOUBLE_EFFECT).value
    if all(effects.get(name, 0) == n for name, n in expected.items()):
        return (Verdict.NEEDS_ATTENTION if dlq else Verdict.EXACTLY_ONCE).value
    if not any(effects.get(name, 0) for name in expected):
        if declined and not dlq and not effects.get(money, 0):
            return Verdict.DECLINED.value
        return (Verdict.FAILED_VISIBLY if dlq else Verdict.SILENT_LOSS).value
    return (Verdict.NEEDS_ATTENTION if dlq else Verdict.SILENT_MISMATCH).value


#: How the check names the money and the books among the effects it counts.
MONEY = "provider:charge"
BOOKS = "books:line"


def judge_upload(effects: Mapping[str, int], baseline: Mapping[str, int], dlq: int,
                 declined: bool = False) -> tuple[str, list[str]]:
    """The check's verdict for one upload, money weighed against the books, and what is wrong,
    named. `effects` and `baseline` count the provider's charges (`MONEY`), the ledger lines
    (`BOOKS`, judged only when the clean run booked some: as many lines per charge as it did)
    and any named effect, as they landed; `dlq` the failure queue's messages about the upload."""
    findings: list[str] = []
    charges, wanted = effects.get(MONEY, 0), baseline.get(MONEY, 0)
    if wanted and charges > wanted:
        findings.append(f"{charges} charges for one upload" + (f" (clean run {wanted})" if wanted > 1 else ""))
    elif wanted and not charges and not declined:
        findings.append("no charge for the upload")
    elif charges < wanted and not declined:  # equal to the clean run's, not merely one or more
        findings.append(f"{charges} charge{'s' if charges != 1 else ''} for the upload where the clean run made {wanted}")
    if baseline.get(BOOKS) and wanted:
        lines, per_charge = effects.get(BOOKS, 0), baseline[BOOKS] / wanted
        if lines < charges * per_charge:
            findings.append("a charge with no ledger line")
        elif lines > charges * per_charge:
            findings.append("a ledger line with no charge")
    others = {name: n for name, n in baseline.items() if n and name not in (MONEY, BOOKS)}
    for name, n in others.items():
        if effects.get(name, 0) > n:
            findings.append(f"{name} {effects[name]} times (clean run {n})")
        elif effects.get(name, 0) < n and not (charges == 0 and (declined or dlq)):
            findings.append(f"{name} {effects.get(name, 0)} times (clean run {n})")
    if wanted and charges > wanted:
        return Verdict.DOUBLE_CHARGE.value, findings
    if any(effects.get(name, 0) > n for name, n in others.items()):
        return Verdict.DOUBLE_EFFECT.value, findings
    if not findings:
        if declined and not charges and wanted:
            return (Verdict.NEEDS_ATTENTION if dlq else Verdict.DECLINED).value, findings
        if dlq and not wanted and not any(effects.get(name, 0) for name in (*others, BOOKS)):
            return Verdict.FAILED_VISIBLY.value, findings  # nothing done, and the failure queue says so
        return (Verdict.NEEDS_ATTENTION if dlq else Verdict.EXACTLY_ONCE).value, findings
    nothing_done = not charges and not any(effects.get(name, 0) for name in others) \
        and not effects.get(BOOKS, 0)
    if nothing_done:
        if declined and not dlq:
            return Verdict.DECLINED.value, []
        return (Verdict.FAILED_VISIBLY if dlq else Verdict.SILENT_LOSS).value, findings
    return (Verdict.NEEDS_ATTENTION if dlq else Verdict.SILENT_MISMATCH).value, findings


#: The verdicts from the worst to the best: a schedule of several uploads takes its worst.
SEVERITY = tuple(v.value for v in (Verdict.DOUBLE_CHARGE, Verdict.DOUBLE_EFFECT, Verdict.SILENT_MISMATCH,
                                   Verdict.SILENT_LOSS, Verdict.NEEDS_ATTENTION, Verdict.FAILED_VISIBLY,
                                   Verdict.DECLINED, Verdict.EXACTLY_ONCE))


def judge_uploads(uploads: Sequence[Mapping[str, int]], whole: Mapping[str, int], baseline: Mapping[str, int],
                  dlqs: Sequence[int], declined: bool = False, unit: str = "upload", shared: Collection[str] = (),
                  may_skip: Collection[int] = ()) -> tuple[str, list[str]]:
    """The check's verdict for a schedule of several uploads (two of one name). Money, and every named
    effect counted per call (a workflow started, an email sent, an event put), is judged per upload
    (`uploads`: what the invocations of each upload's event did; `dlqs`: the failure queue's messages
    about each): each is owed what the clean run made, and one with no count for an effect made it 0
    times (docs/one_charge_per_order.md: every order gets each named effect), so two charges for one
    and none for the other is two breaks, not a balance. The books, and the named effects in `shared`
    (the messages a queue or an SNS FIFO topic delivers), cannot be told apart by upload: they are
    judged over the schedule (`whole`), lines against charges as many per charge as the clean run
    booked, messages against the clean run's count for each upload. `may_skip`: the indexes (from 0)
    of uploads a declared ordering rule lets go without a named effect of their own (`--ordering
    sequencer`: an order with a newer upload of its name; `idem.explore.judge.state.skipped_by_rule`),
    never without its money. The worst verdict wins (SEVERITY); each finding names its upload (`unit`:
    "order" when the counts are an order's, its uploads summed: docs/one_charge_per_order.md)."""
    verdicts, findings = [], []
    owed = {name: n for name, n in baseline.items() if name != BOOKS and name not in shared}
    for n, (effects, dlq) in enumerate(zip(uploads, dlqs), start=1):
        wanted = {name: want for name, want in owed.items()
                  if n - 1 not in may_skip or name == MONEY or effects.get(name, 0)}
        verdict, found = judge_upload(effects, wanted, dlq, declined)
        verdicts.append(verdict)
        findings += [f"{unit} {n}: {f.replace('the upload', f'the {unit}').replace('one upload', f'one {unit}')}"
                     for f in found]
    alerted = sum(dlqs) > 0
    wrong = (Verdict.NEEDS_ATTENTION if alerted else Verdict.SILENT_MISMATCH).value
    charges, wanted = whole.get(MONEY, 0), baseline.get(MONEY, 0)
    if baseline.get(BOOKS) and wanted:
        lines, per_charge = whole.get(BOOKS, 0), baseline[BOOKS] / wanted
        if lines != charges * per_charge:
            findings.append("a charge with no ledger line" if lines < charges * per_charge
                            else "a ledger line with no charge")
            verdicts.append(wrong)
    together = {name: n * len(uploads) for name, n in baseline.items()
                if n and name not in (MONEY, BOOKS) and name in shared}
    for name, n in together.items():
        got = whole.get(name, 0)
        if got != n:
            findings.append(f"{name} {got} times for {len(uploads)} {unit}s (clean run {n // len(uploads)} each)")
            verdicts.append(Verdict.DOUBLE_EFFECT.value if got > n else wrong)
    return min(verdicts, key=SEVERITY.index), findings
