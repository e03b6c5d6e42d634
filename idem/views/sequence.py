"""Sequence diagrams of a real run: who called whom, in what order, and where an attempt died.

`sequence_of(outcome)` reads a scenario's run (`scenarios.run(...)`): the attempts the local
runtime recorded, each with the boundaries it crossed (every AWS call and provider call,
before and after), the steps it reached, how it ended, and the failure queue's messages.
It returns the arrows in the order they happened. `sequence_chart(outcome)` draws them.

The lifelines, left to right: the failure queue, S3 and Lambda's async queue, one per
attempt of the function, the ledger table, and the payment provider.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from IPython.display import Markdown

from ..explore import scenarios as sc
from ..sim.faults import CHARGE_CALL, END_CALL, PROVIDER_POINTS, STEP_BOUNDARIES, Side, Step
from ..sim.runtime import Attempt

FAILURE_QUEUE = "failure queue"
QUEUE = "S3 and Lambda's queue"
LEDGER = "ledger table"
PROVIDER = "payment provider"

#: What each kind of arrow means, and its colour and line style (the chart's legend).
KINDS: dict[str, tuple[str, str, str]] = {
    "invoke": ("Lambda invokes an attempt", "#1565c0", "-"),
    "call": ("a call (request)", "#333333", "-"),
    "ok": ("answer: done as asked", "#2e7d32", "--"),
    "charged": ("answer: a new charge, money moved", "#b8860b", "--"),
    "replay": ("answer: the provider's replay, no money moved", "#6a1b9a", "--"),
    "refused": ("answer: refused (condition failed) or an error", "#c62828", "--"),
    "lost": ("answer lost on the way (x): the call did its work", "#ef6c00", "--"),
    "not_sent": ("call never sent (x): a fault before it", "#ef6c00", "-"),
    "returned": ("the attempt returns: Lambda counts a success", "#2e7d32", "-"),
    "error": ("the attempt fails: Lambda will retry or give up", "#c62828", "-"),
    "record": ("Lambda sends the event's record to the failure queue", "#1565c0", "-"),
}
DEATH = ("X", "#c62828")  # the cross where an attempt dies
ACTIVE = "#e3ecf7"  # the bar while an attempt runs

#: What each DynamoDB call does, per handler: (the call, its answer when done, when refused).
ROLES: dict[str, dict[str, tuple[str, str, str]]] = {
    "naive": {"UpdateItem": ("add to the account's entry", "ok", "refused")},
    "claim_first": {"PutItem": ("claim the key (conditional put)", "claimed", "refused: claimed already"),
                    "UpdateItem": ("add to the account's entry", "ok", "refused")},
    "robust": {"GetItem": ("read the record", "the record", "error"),
               "PutItem": ("put the record (conditional)", "written", "refused: written already"),
               "UpdateItem": ("add to the entry, or mark done", "ok", "refused")},
    "keyed": {"PutItem": ("claim (conditional put)", "claimed", "refused: held or done already"),
              "GetItem": ("who pays: the account's customer mapping (consistent read)", "its customer",
                          "error")},
}
#: keyed's claim refused by a claim whose lease ran out, and its fenced put that takes it over.
KEYED_EXPIRED = "refused: a claim whose lease ran out, or released (take it over)"
KEYED_TAKEOVER = ("take over, fenced to the record read", "taken over", "refused: another took it")
#: keyed's write after a charge came back: the commit, whatever call makes it.
KEYED_COMMIT = ("commit, only if still the owner", "committed", "refused: not the owner")
#: keyed's other UpdateItem calls, when no charge came back: give the work back, or end it.
KEYED_RELEASE = ("give the work back (owner only)", "ok", "refused: not the owner")
KEYED_FINISH = ("record the provider's answer (owner only)", "ok", "refused: not the owner")
#: Results that mean a claim was refused (no charge was tried), and a commit was refused.
CLAIM_REFUSED = ("duplicate", "WorkInProgress", "NeedsAttention")
COMMIT_REFUSED = ("superseded", "LostOwnership")


@dataclass(frozen=True)
class Message:
    """One arrow of the diagram, in the order it happened."""

    t: float  # seconds on the virtual clock
    source: str  # a lifeline
    target: str
    label: str
    kind: str  # a key of KINDS

    def __str__(self) -> str:
        return f"t={self.t:g} {self.source} -> {self.target}: {self.label} [{self.kind}]"


@dataclass
class Sequence:
    """A run as a sequence diagram: lifelines, arrows in order, deaths, and what each side holds."""

    lifelines: list[str]
    messages: list[Message] = field(default_factory=list)
    deaths: list[tuple[int, str, str]] = field(default_factory=list)  # (message index, lifeline, how)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # attempt -> first, last message
    notes: dict[str, str] = field(default_factory=dict)  # lifeline -> what it holds at the end
    title: str = ""

    def arrows(self) -> list[tuple[str, str, str]]:
        """(source, target, kind) of every arrow, in order: what a test compares."""
        return [(m.source, m.target, m.kind) for m in self.messages]


def attempt_name(attempt: Attempt, deliveries: int) -> str:
    """An attempt's lifeline: `attempt 2`, or `copy 2, attempt 1` when S3 delivered twice."""
    if deliveries > 1:
        return f"copy {attempt.delivery}, attempt {attempt.attempt}"
    return f"attempt {attempt.attempt}"


def _nested(outcome: sc.Outcome) -> dict[int, tuple[Attempt, int]]:
    """Attempts that ran inside another: id -> (the host attempt, the crossing it ran after).

    Lambda runs one attempt at a time, except a concurrent copy (a scenario's `concurrent`
    delivery), which runs inside the first attempt when that reaches `concurrent_at`.
    """
    s = outcome.scenario
    if s.delivery != "concurrent":
        return {}
    first = next((a for a in outcome.trace if (a.delivery, a.attempt) == (1, 1)), None)
    copy = next((a for a in outcome.trace if (a.delivery, a.attempt) == (2, 1)), None)
    if not (first and copy):
        return {}
    boundary = STEP_BOUNDARIES[Step(s.concurrent_at)]
    at = next((i for i, c in enumerate(first.crossings) if c.boundary == boundary), None)
    return {} if at is None else {id(copy): (first, at)}


def sequence_of(outcome: sc.Outcome) -> Sequence:
    """The arrows of a run, in the order they happened, read from what the runtime recorded."""
    deliveries = len({a.delivery for a in outcome.trace})
    names = {id(a): attempt_name(a, deliveries) for a in outcome.trace}
    seq = Sequence([FAILURE_QUEUE, QUEUE, *names.values(), LEDGER, PROVIDER], title=_title(outcome))
    nested = _nested(outcome)
    for attempt in outcome.trace:
        if id(attempt) in nested:
            continue
        guests = {at: guest for guest in outcome.trace for host, at in [nested.get(id(guest), (None, -1))]
                  if host is attempt}
        _attempt(seq, outcome, attempt, names, guests)
    _name_the_first_charge(seq, outcome)
    made = list(dict.fromkeys(m.label.rsplit(" ", 1)[-1] for m in seq.messages
                              if m.kind in ("charged", "replay") and " ch_" in m.label))
    booked = sorted({str(item["charge_id"]) for item in outcome.items if item.get("charge_id")}
                    | {str(item["pk"])[len("entry#"):] for item in outcome.items
                       if str(item.get("pk", "")).startswith("entry#")})
    seq.notes = {
        FAILURE_QUEUE: f"{outcome.dlq} message(s)",
        LEDGER: f"your ledger: {outcome.ledger} charge(s)" + "".join(f"\n{c}" for c in booked)
                + f"\nrecord: {outcome.record}",
        PROVIDER: f"provider: {outcome.charges} charge(s)"
                  + ("".join(f"\n{c}" for c in made) if len(made) == outcome.charges else ""),
    }
    return seq


def _name_the_first_charge(seq: Sequence, outcome: sc.Outcome) -> None:
    """A charge whose answer was never read has no id in the run; when the provider made one
    charge and a later attempt got it replayed, that replay names it."""
    replays = [m.label.rsplit(" ", 1)[-1] for m in seq.messages if m.kind == "replay" and " ch_" in m.label]
    if outcome.charges != 1 or not replays:
        return
    for n, m in enumerate(seq.messages):
        if m.kind == "charged" and " ch_" not in m.label:
            seq.messages[n] = Message(m.t, m.source, m.target, f"{m.label} {replays[0]}", m.kind)


def _attempt(seq: Sequence, outcome: sc.Outcome, attempt: Attempt, names: dict[int, str],
             guests: dict[int, Attempt]) -> None:
    me = names[id(attempt)]
    first = len(seq.messages)
    if attempt.delivery > 1 and attempt.attempt == 1:
        label = "invoke: a second copy of the event"
    elif attempt.attempt > 1:
        label = f"retry (attempt {attempt.attempt})"
    else:
        label = "invoke: the upload's event"
    seq.messages.append(Message(attempt.start, QUEUE, me, label, "invoke"))
    handler = outcome.scenario.handler
    roles = ROLES.get(handler, {})
    dynamodb = [i for i, c in enumerate(attempt.crossings)
                if c.boundary.call.startswith("dynamodb:") and c.boundary.side is Side.AFTER]
    refused_last = _refused(attempt)
    charge_steps = iter(step for _, step in attempt.steps if step in ("charged", "replayed"))
    charged_ok = provider_said_no = False
    takeover = _takeover(attempt) if handler == "keyed" else None
    for i, crossing in enumerate(attempt.crossings):
        call, side, t = crossing.boundary.call, crossing.boundary.side, crossing.t
        if call.startswith("dynamodb:"):
            op = call.split(":", 1)[1]
            role, done, refusal = roles.get(op, (op, "ok", "refused"))
            if handler == "keyed" and charged_ok and op != "GetItem":
                role, done, refusal = KEYED_COMMIT
            elif handler == "keyed" and op == "UpdateItem":
                role, done, refusal = KEYED_FINISH if provider_said_no else KEYED_RELEASE
            elif takeover is not None and i in takeover[1]:
                role, done, refusal = KEYED_TAKEOVER
            if takeover is not None and i == takeover[0]:
                done = KEYED_EXPIRED  # the claim's put was refused: the record it met is taken over
            if side is Side.BEFORE:
                seq.messages.append(Message(t, me, LEDGER, f"{op}: {role}", "call"))
            elif crossing.failed:
                seq.messages.append(Message(t, LEDGER, me, "answer lost", "lost"))
            elif refused_last and dynamodb and i == dynamodb[-1]:
                seq.messages.append(Message(t, LEDGER, me, refusal, "refused"))
            elif done == KEYED_EXPIRED:
                seq.messages.append(Message(t, LEDGER, me, done, "refused"))
            else:
                seq.messages.append(Message(t, LEDGER, me, done, "ok"))
        elif call == CHARGE_CALL:
            if side is Side.BEFORE:
                key = " with its idempotency key" if handler == "keyed" else ""
                if crossing.failed in ("exception", "crash"):
                    seq.messages.append(Message(t, me, PROVIDER, f"charge{key}: never sent", "not_sent"))
                else:
                    seq.messages.append(Message(t, me, PROVIDER, f"charge{key}", "call"))
                    if crossing.failed in PROVIDER_POINTS:
                        seq.messages.append(Message(t, PROVIDER, me, f"error: {crossing.failed}", "refused"))
                        provider_said_no = True
            else:
                step = next(charge_steps, "charged")
                charge_id = (_processed(attempt) or {}).get("charge_id")
                named = f" {charge_id}" if charge_id else ""
                if crossing.failed == "exception":
                    seq.messages.append(Message(t, PROVIDER, me, "charged, but the answer is lost", "lost"))
                elif step == "replayed":
                    seq.messages.append(Message(t, PROVIDER, me, f"replay of the first charge{named}", "replay"))
                    charged_ok = True
                else:
                    seq.messages.append(Message(t, PROVIDER, me, f"new charge{named}", "charged"))
                    charged_ok = True
        elif call == END_CALL and not crossing.failed and attempt.outcome != "timeout":
            status = (_processed(attempt) or {}).get("status") or "ok"
            seq.messages.append(Message(t, me, QUEUE, f"returns {status}", "returned"))
        if i in guests:  # a copy of the event ran here, inside this attempt
            _attempt(seq, outcome, guests[i], names, {})
    if attempt.failed:
        how = {"crash": "crash: the process died", "timeout": "timed out at its deadline"}.get(
            attempt.outcome, f"error: {attempt.error.split(':', 1)[0]}")
        seq.messages.append(Message(attempt.end, me, QUEUE, how, "error"))
        seq.deaths.append((len(seq.messages) - 1, me, attempt.outcome))
    seq.spans[me] = (first, len(seq.messages) - 1)
    if attempt.failed and not _retried(outcome, attempt):
        _to_failure_queue(seq, outcome, attempt)


def _takeover(attempt: Attempt) -> tuple[int, set[int]] | None:
    """keyed's takeover: two puts before any charge, the first answered (not lost, so not a
    resend of it): the claim met a record whose lease ran out (or a released one), and the second
    put takes it over. (The claim's answer crossing, the takeover's two crossings), or None."""
    puts = [i for i, c in enumerate(attempt.crossings)
            if c.boundary.call == "dynamodb:PutItem" and not any(
                d.boundary.call == CHARGE_CALL for d in attempt.crossings[:i])]
    answers = [i for i in puts if attempt.crossings[i].boundary.side is Side.AFTER]
    if len(answers) < 2 or attempt.crossings[answers[0]].failed:
        return None
    return answers[0], {i for i in puts if i > answers[0]}


def _processed(attempt: Attempt) -> dict[str, Any] | None:
    processed = (attempt.result or {}).get("processed") if isinstance(attempt.result, dict) else None
    return processed[0] if processed else None


def _refused(attempt: Attempt) -> bool:
    """Did the attempt stop because its last write was refused: a claim held already (it then
    never called the provider), or a commit fenced off?"""
    said = {(_processed(attempt) or {}).get("status", ""), attempt.error.split(":", 1)[0]}
    called = any(c.boundary.call == CHARGE_CALL for c in attempt.crossings)
    return bool(said & set(COMMIT_REFUSED)) or (not called and bool(said & set(CLAIM_REFUSED)))


def _retried(outcome: sc.Outcome, attempt: Attempt) -> bool:
    return any(a.delivery == attempt.delivery and a.attempt == attempt.attempt + 1 for a in outcome.trace)


def _to_failure_queue(seq: Sequence, outcome: sc.Outcome, attempt: Attempt) -> None:
    """Lambda gave up on this attempt's event: its record went to the failure queue."""
    for failure in outcome.failures:
        context = failure.get("requestContext", {})
        if context.get("requestId") == attempt.request_id:
            seq.messages.append(Message(attempt.end, QUEUE, FAILURE_QUEUE,
                                        f"the event's record ({context.get('condition', '')})", "record"))


def _title(outcome: sc.Outcome) -> str:
    s = outcome.scenario
    fault = "no fault" if s.fault == "none" else f"{s.fault} ({s.times}, {s.how})"
    return f"{s.handler}, {fault}: {outcome.charges} charge(s), {outcome.verdict}"


# -- the picture -----------------------------------------------------------------------------------
def sequence_chart(outcome: sc.Outcome | Sequence, title: str | None = None) -> Any:
    """Draw a run as a sequence diagram: lifelines across, arrows down in the order they happened."""
    seq = outcome if isinstance(outcome, Sequence) else sequence_of(outcome)
    lanes = {name: n for n, name in enumerate(seq.lifelines)}
    rows = len(seq.messages)
    fig, ax = plt.subplots(figsize=(1.65 * len(lanes) + 1.2, 0.36 * rows + 3.2))
    top, bottom = -1.2, rows + 0.9
    for name, x in lanes.items():
        ax.plot([x, x], [top + 0.5, bottom - 0.6], color="#bbbbbb", lw=1, ls=":", zorder=0)
        ax.text(x, top, name.replace(", ", ",\n"), ha="center", va="center", fontsize=8.5,
                bbox={"boxstyle": "round", "fc": "#f5f5f5", "ec": "#999999"})
        note = seq.notes.get(name)
        if note:
            ax.text(x, bottom, note, ha="center", va="center", fontsize=8,
                    bbox={"boxstyle": "round", "fc": "#fffbe6", "ec": "#b8860b"})
    for name, (first, last) in seq.spans.items():
        x = lanes[name]
        ax.add_patch(plt.Rectangle((x - 0.06, first - 0.3), 0.12, last - first + 0.6,
                                   color=ACTIVE, ec="#90a4c0", zorder=1))
    previous_t = None
    for row, m in enumerate(seq.messages):
        _, colour, style = KINDS[m.kind]
        x0, x1 = lanes[m.source], lanes[m.target]
        ax.annotate("", xy=(x1, row), xytext=(x0, row), zorder=3,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "ls": style, "lw": 1.3,
                                "shrinkA": 4, "shrinkB": 4})
        ax.text((x0 + x1) / 2, row - 0.12, m.label, ha="center", va="bottom", fontsize=7.5,
                color=colour, zorder=4)
        if m.kind in ("lost", "not_sent"):
            where = (x0 + x1) / 2 if m.kind == "lost" else x0 + (0.25 if x1 > x0 else -0.25)
            ax.scatter([where], [row], marker="x", s=60, color=colour, zorder=5, lw=2)
        if m.t != previous_t:
            ax.text(-0.55, row, f"t={m.t:g} s", ha="right", va="center", fontsize=8, color="#555555")
            previous_t = m.t
    for row, name, _ in seq.deaths:
        ax.scatter([lanes[name]], [row + 0.35], marker=DEATH[0], s=170, color=DEATH[1], zorder=6)
    used = list(dict.fromkeys(m.kind for m in seq.messages))
    handles = [Line2D([0], [0], color=KINDS[k][1], ls=KINDS[k][2], lw=1.5, label=KINDS[k][0])
               for k in KINDS if k in used]
    if any(m.kind in ("lost", "not_sent") for m in seq.messages):
        handles.append(Line2D([0], [0], marker="x", color="#555555", lw=0, markersize=8,
                              markeredgewidth=2, label="the request, or its answer, never arrived"))
    if seq.deaths:
        handles.append(Line2D([0], [0], marker=DEATH[0], color=DEATH[1], lw=0, markersize=10,
                              label="the attempt dies here"))
    handles += [Patch(fc=ACTIVE, ec="#90a4c0", label="an attempt running"),
                Patch(fc="#fffbe6", ec="#b8860b", label="what each side holds at the end")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=2,
              fontsize=8, frameon=False)
    ax.set_xlim(-1.3, len(lanes) - 0.4)
    ax.set_ylim(bottom + 0.6, top - 0.6)
    ax.axis("off")
    _ = ax.set_title(title or seq.title, fontsize=10)
    fig.tight_layout()
    return fig


# -- a listing without its docstring ---------------------------------------------------------------
def source_without_docstring(obj: Any) -> str:
    """The real source of a function, without its docstring: the code alone."""
    source = textwrap.dedent(inspect.getsource(obj))
    node = ast.parse(source).body[0]
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        lines = source.splitlines(keepends=True)
        first, last = body[0].lineno - 1, body[0].end_lineno  # 1-based, inclusive
        source = "".join(lines[:first] + lines[last:])
    return source.rstrip()


def show_code(*objects: Any) -> Markdown:
    """Like `show_source`, without the docstrings: for a listing whose docstring argues with
    words a later chapter defines. The code shown is the code that runs."""
    return Markdown("```python\n" + "\n\n\n".join(source_without_docstring(o) for o in objects) + "\n```")
