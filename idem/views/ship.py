"""Views for chapter 12, what to ship: every pattern in one row, the decision diagram, the exercise.

Each pattern's row is computed: its verdicts on the eight rows of the scenario matrix's headline
(`scenarios.headline_scenarios`), whether it hands its key to the provider (read back from the
provider after one upload), and its DynamoDB bill per first delivery and per duplicate
(`idem.cost.bill.measure`). `recommend` walks the decision diagram for what a reader needs,
with reasons taken from those rows; `check_choices` checks the chapter's exercise.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import ipywidgets as widgets
import pandas as pd

from ..core.patterns import HANDLERS
from ..cost import bill
from ..core.reconcile import job as reconcile_job
from ..core.handlers import keyed_events
from ..deploy.aws import emulated
from ..deploy import template as tp
from ..explore import powertools as pt, scenarios as sc
from ..lessons.answers import not_yet, unfilled
from ..sim.runtime import LocalLambda
from ..explore.schedules import run_schedules
from ..sim.world import LocalWorld, fake_session
from ..console import one_of
from .tables import Whole
# chapter 10's alarm views, in their own module (this one is past 600 lines)
from .alarms_view import (ALARM_FAMILIES, ALARM_TODO, alarm_family, alarm_rows,  # noqa: F401
                          alarm_trigger, alarms, alarms_text)
from .widgets import make_explorer, pinned

WIDTH = 96  # reasons wrap here, to fit the page
PATTERNS = ("naive", "claim_first", "robust", "keyed", "powertools")


# -- chapter 12: every pattern in one row -------------------------------------------------------
@dataclass(frozen=True)
class PatternRow:
    """One pattern, as the runs measured it."""

    pattern: str
    verdicts: dict[str, str]  # headline row label -> verdict
    key_to_provider: bool  # did its charge carry an idempotency key?
    first: bill.Bill  # the first delivery of an upload
    duplicate: bill.Bill  # the same event delivered again, after the first finished

    def count(self, verdict: str) -> int:
        return sum(1 for v in self.verdicts.values() if v == verdict)

    @property
    def rows(self) -> int:
        return len(self.verdicts)

    def cells(self) -> dict[str, Any]:
        return {
            "double charge": _rows_with(self.count("double_charge"), self.rows),
            "silent loss": _rows_with(self.count("silent_loss"), self.rows),
            "silent mismatch": _rows_with(self.count("silent_mismatch"), self.rows),
            "key to provider": "yes" if self.key_to_provider else "no",
            "first delivery": cost(self.first),
            "duplicate": cost(self.duplicate),
            "$ per 1M uploads": self.first.dollars_per_million,
        }


def _rows_with(n: int, of: int) -> str:
    return f"{n} of {of}" if n else "no"


def _in_rows(what: str, n: int, of: int) -> str:
    """`no double charge in its 8 rows`, or `double charge in 3 of 8 rows`."""
    return f"{what} in {n} of {of} rows" if n else f"no {what} in its {of} rows"


def units(one: bill.Bill) -> str:
    """Request units as `3 W + 1 R` (write units, read units); `0 W` when there are none."""
    parts = [f"{value:g} {letter}" for value, letter in ((one.wru, "W"), (one.rru, "R")) if value]
    return " + ".join(parts) or "0 W"


def cost(one: bill.Bill) -> str:
    """DynamoDB calls, then request units: `2 calls, 3 W`."""
    return f"{one.calls} call{'s' if one.calls != 1 else ''}, {units(one)}"


def _label(s: sc.Scenario) -> str:
    if s.delivery != "single":
        return f"{s.fault}, {s.delivery} delivery"
    return s.fault if s.times == "-" else f"{s.fault}, {s.times}"


@contextlib.contextmanager
def _function(world: LocalWorld, handler: str) -> Iterator[tuple[dict[str, str], str]]:
    """The function's environment and entry module for `handler` in `world`."""
    if handler == sc.POWERTOOLS:

        with pt.idempotency_table(world) as table:
            yield {**world.env(handler), "IDEMPOTENCY_TABLE": table}, pt.ENTRY
    else:
        yield world.env(handler), "idem.core.entry"


def passes_key(handler: str) -> bool:
    """Run one upload through `handler` and ask the provider: did the charge carry a key?"""
    with LocalWorld(prefix="ship") as world, _function(world, handler) as (env, entry):
        runtime = LocalLambda(world, env, entry=entry)
        runtime.send(world.event(world.upload(sc.ORDER_KEY)))
        runtime.run()
        charges = world.provider().charges()
    if not charges:
        raise RuntimeError(f"{handler} made no charge for a clean upload")
    return all(charge.idempotency_key for charge in charges)


def headline_verdicts(patterns: Iterable[str] = PATTERNS) -> dict[str, dict[str, str]]:
    """pattern -> headline row label -> verdict. The core handlers share worlds (the schedule
    runner's way, same verdicts, less time); powertools runs a world per row."""
    patterns = tuple(patterns)
    core = [s for s in sc.headline_scenarios([p for p in patterns if p in HANDLERS])]
    outcomes = [result.outcome for result in run_schedules(core, batch=len(core) or 1)]
    outcomes += [sc.run(s) for s in sc.headline_scenarios([p for p in patterns if p not in HANDLERS])]
    found: dict[str, dict[str, str]] = {p: {} for p in patterns}
    for outcome in outcomes:
        found[outcome.scenario.handler][_label(outcome.scenario)] = outcome.verdict
    return found


def pattern_rows(patterns: Iterable[str] = PATTERNS) -> list[PatternRow]:
    """Every pattern's row: the headline matrix, the key, the bill. A few seconds."""
    patterns = tuple(patterns)
    verdicts = headline_verdicts(patterns)
    return [PatternRow(p, verdicts[p], passes_key(p), bill.measure(p, "first"),
                       bill.measure(p, "duplicate")) for p in patterns]


def pattern_table(rows: Iterable[PatternRow]) -> pd.DataFrame:
    """One row per pattern: what can go wrong (matrix rows out of the headline's eight), and
    what one upload costs on DynamoDB (calls, request units, dollars per million first deliveries)."""
    frame = pd.DataFrame({row.pattern: row.cells() for row in rows}).T
    frame.index.name = "pattern"
    return frame


def _by_name(rows: Iterable[PatternRow]) -> dict[str, PatternRow]:
    return {row.pattern: row for row in rows}


def imports_of(path: Path) -> list[str]:
    """The top-level modules a Python file imports (`__future__` aside), read from its syntax."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add((node.module or "").split(".")[0])
    return sorted(found - {"__future__"})


def files_to_copy(*modules: Any) -> str:
    """One line per file a reader copies: its name, its length and every module it imports."""
    lines = []
    for module in modules:
        path = Path(module.__file__)
        lines.append(textwrap.fill(f"{path.name:16} {len(path.read_text().splitlines()):5,} lines  "
                                   f"imports: {', '.join(imports_of(path))}", WIDTH, subsequent_indent=" " * 36))
    return "\n".join(lines)


# -- chapter 12: which pattern do you need? -----------------------------------------------------
EFFECTS = ("an overwrite", "a write to your own table", "a charge, provider takes keys",
           "a charge, provider takes no keys")
LOSS = ("no", "yes, and reconciled")
COPIES = ("can overlap", "never overlap")
COST = ("matters little", "matters most")
LIBRARY = ("hand-rolled", "Powertools")


@dataclass(frozen=True)
class Recommendation:
    pattern: str  # what to build
    row: str  # the table row that measures it
    path: tuple[str, ...]  # the answers taken through the decision diagram
    reasons: tuple[str, ...]

    def text(self) -> str:
        lines = [f"Build: {self.pattern}  (its measured row: {self.row})",
                 textwrap.fill(" > ".join(step.replace(" ", "\0") for step in self.path), WIDTH,
                               initial_indent="Path: ", subsequent_indent="      ",
                               break_on_hyphens=False).replace("\0", " ")]
        for reason in self.reasons:
            lines.append(textwrap.fill(reason, WIDTH, initial_indent="- ", subsequent_indent="  "))
        return "\n".join(lines)


def recommend(rows: Iterable[PatternRow], effect: str = EFFECTS[2], lost_ok: str = LOSS[0],
              copies: str = COPIES[0], cost: str = COST[0], library: str = LIBRARY[0]) -> Recommendation:
    """Walk the decision diagram for what a handler needs; every reason quotes a measured row."""
    one_of("effect", effect, EFFECTS), one_of("lost_ok", lost_ok, LOSS)
    one_of("copies", copies, COPIES), one_of("cost", cost, COST), one_of("library", library, LIBRARY)
    r = _by_name(rows)
    naive, claim_first, robust, keyed = r["naive"], r["claim_first"], r["robust"], r["keyed"]
    n = keyed.rows
    saving = keyed.first.dollars_per_million - claim_first.first.dollars_per_million
    path = [f"effect: {effect}"]
    reasons: list[str] = []
    if effect == EFFECTS[0]:
        pattern, row = "an overwrite, no record", "naive"
        reasons.append("Writing the same result twice leaves the world as writing it once: the effect is "
                       "idempotent. Set a value named by the upload; never add to one.")
        reasons.append(f"naive adds to a balance, which is why its row shows a double charge in "
                       f"{naive.count('double_charge')} of {n} rows.")
    else:
        path.append(f"losing an upload acceptable: {lost_ok}")
        if lost_ok == LOSS[1]:
            path.append(f"cost: {cost}")
        if lost_ok == LOSS[1] and cost == COST[1]:
            pattern, row = "claim_first, watched by reconciliation", "claim_first"
            reasons.append(f"One conditional write, then the work: claim_first never charges twice "
                           f"({_in_rows('double charge', claim_first.count('double_charge'), n)}).")
            reasons.append(f"A failure after its claim loses work without a sound (silent loss in "
                           f"{claim_first.count('silent_loss')} of {n} rows, silent mismatch in "
                           f"{claim_first.count('silent_mismatch')}): only reconciliation finds them.")
            reasons.append(f"It saves ${saving:g} per million first deliveries against keyed.")
        else:
            if lost_ok == LOSS[1]:
                reasons.append(f"Losing work is allowed, but claim_first would save only ${saving:g} per "
                               "million first deliveries: keep the work instead.")
            pattern, row = _keep_the_work(effect, library, path, reasons, r)
        if copies == COPIES[0]:
            reasons.append(f"Copies that overlap rule out a read followed by a write: robust, which reads "
                           f"first, ends in {robust.verdicts['none, concurrent delivery']} when a copy "
                           "runs concurrently. The pattern named here claims with one conditional write.")
        else:
            reasons.append("S3 and Lambda make no such promise: a duplicate can start while the first "
                           "copy runs. The answer does not change: the claim is one conditional write.")
        path.append(f"copies {copies}")
    reasons.append("Whatever you build: reconcile on a schedule (07), and run `idem check` on it (11).")
    return Recommendation(pattern, row, tuple(path), tuple(reasons))


def _keep_the_work(effect: str, library: str, path: list[str], reasons: list[str],
                   r: Mapping[str, PatternRow]) -> tuple[str, str]:
    keyed, robust, powertools = r["keyed"], r["robust"], r["powertools"]
    n = keyed.rows
    if effect == EFFECTS[1]:
        reasons.append("Write the effect and the done record together, in one transaction: both land, "
                       "or neither does, so no failure can leave one without the other.")
        reasons.append("keyed's commit goes further: its done record is its ledger line, one owner-fenced "
                       "write. Keep its claim and commit, and let the commit carry your effect.")
        return "one transaction: the effect and the done record", "keyed"
    if effect == EFFECTS[2]:
        path.append(f"library: {library}")
        if library == LIBRARY[1]:
            reasons.append(f"Powertools gives the claim, the in-progress expiry and the record's expiry. "
                           f"Alone it ends in double charge in {powertools.count('double_charge')} of "
                           f"{n} rows: it deletes its record when the function raises after the charge.")
            reasons.append("Pass its key to the provider from inside the idempotent function, and set "
                           "expires_after_seconds above the maximum event age.")
            return "Powertools, with its key passed to the provider", "powertools"
        double, loss = keyed.count("double_charge"), keyed.count("silent_loss")
        measured = (f"no double charge and no silent loss in its {n} rows" if not double + loss else
                    f"{_in_rows('double charge', double, n)}, {_in_rows('silent loss', loss, n)}")
        reasons.append(f"A claim with a lease, the same key to the provider, a commit fenced to the "
                       f"owner: {measured}.")
        return "keyed (the handler to copy)", "keyed"
    reasons.append("Without a key, no code of yours can tell whether a lost answer moved money: "
                   f"robust, a record with no key, ends in double charge in "
                   f"{robust.count('double_charge')} of {n} rows.")
    reasons.append("Keep keyed's claim, lease and fenced commit. Before charging again, look the "
                   "charge up by the upload; if that cannot tell, mark the record needs_attention.")
    return "keyed's claim and commit, a look-up instead of the key", "keyed"


def show_recommendation(recommendation: Recommendation) -> None:
    print(recommendation.text())


def _recommend_controls(effect: str, lost_ok: str, copies: str, cost: str,
                        library: str) -> dict[str, widgets.ValueWidget]:
    wide = {"description_width": "initial"}
    return {
        "effect": widgets.Dropdown(options=EFFECTS, value=effect, description="the effect is",
                                   style=wide),
        "lost_ok": widgets.ToggleButtons(options=LOSS, value=lost_ok, description="lose an upload?",
                                         style=wide),
        "copies": widgets.ToggleButtons(options=COPIES, value=copies, description="copies",
                                        style=wide),
        "cost": widgets.ToggleButtons(options=COST, value=cost, description="cost", style=wide),
        "library": widgets.ToggleButtons(options=LIBRARY, value=library, description="code",
                                         style=wide),
    }


def recommend_explorer(rows: list[PatternRow], effect: str = EFFECTS[2], lost_ok: str = LOSS[0],
                       copies: str = COPIES[0], cost: str = COST[0],
                       library: str = LIBRARY[0]) -> widgets.Widget:
    """Say what the handler needs; see the pattern the decision diagram gives, and why."""
    return make_explorer(
        _recommend_controls(effect, lost_ok, copies, cost, library),
        functools.partial(recommend, rows), show_recommendation,
        links={"cost": lambda v: {"disabled": v["effect"] == EFFECTS[0] or v["lost_ok"] == LOSS[0]},
               "library": lambda v: {"disabled": v["effect"] != EFFECTS[2]},
               "lost_ok": lambda v: {"disabled": v["effect"] == EFFECTS[0]},
               "copies": lambda v: {"disabled": v["effect"] == EFFECTS[0]}})


recommend_explore = pinned(recommend, show_recommendation,
                           "Recommend a pattern and say why (the explorer's twin).")


# -- chapter 12: the exercise --------------------------------------------------------------------
SYSTEMS = {  # cases the chapter did not run, said as facts, never in the diagram's words
    "invoice": "render the order's invoice PDF from the order file alone; save it to S3 as "
               "invoices/<order_id>.pdf",
    "refund": "refund the part of a payment a returned item is worth, with Stripe's Refunds API",
    "balance": "add the order's total to the customer's store credit, an item in the app's DynamoDB table",
    "chat": "post 'thanks for your order' to a team chat's webhook, which has no request ids and "
            "cannot list past posts; millions of orders a day; a thank-you a day late harms no one, "
            "two look sloppy",
}
CHOICES = ("overwrite", "claim_first", "transaction", "keyed")
ANSWERS = {"invoice": "overwrite", "refund": "keyed", "balance": "transaction", "chat": "claim_first"}


def _why(system: str, choice: str, r: Mapping[str, PatternRow]) -> tuple[str, str]:
    """(verdict, why): verdict is `right`, `more than needed` or `wrong`."""
    naive, claim_first, robust, keyed = r["naive"], r["claim_first"], r["robust"], r["keyed"]
    n = keyed.rows
    lost = f"claim_first ends in silent loss in {claim_first.count('silent_loss')} of {n} rows"
    outside = "it happens outside DynamoDB, and no DynamoDB transaction can include it"
    table = {
        ("invoice", "overwrite"): ("right", "one order, one file, one name: writing it twice leaves one invoice."),
        ("invoice", "claim_first"): ("wrong", f"a failure after the claim leaves no invoice for good "
                                              f"({lost}); writing the file again was harmless all along."),
        ("invoice", "transaction"): ("wrong", f"the invoice is a file in S3: {outside}."),
        ("invoice", "keyed"): ("more than needed", f"safe, but it pays {keyed.first.calls} DynamoDB calls "
                                                   f"and ${keyed.first.dollars_per_million:g} per million "
                                                   "uploads to guard a write that is harmless to repeat."),
        # partial refunds "multiple times": https://docs.stripe.com/api/refunds/create
        ("refund", "overwrite"): ("wrong", "a refund is money moved, not a value set: Stripe refunds part "
                                           "of a payment again and again until it is all refunded. With no "
                                           f"guard, naive moves money twice in {naive.count('double_charge')} "
                                           f"of {n} rows."),
        ("refund", "claim_first"): ("wrong", f"{lost} and silent mismatch in "
                                             f"{claim_first.count('silent_mismatch')}: a customer is "
                                             "never refunded, or refunded with nothing in the books."),
        ("refund", "transaction"): ("wrong", f"the refund moves money at the provider: {outside}. Only "
                                             "the provider's key makes a retried refund the same one."),
        ("refund", "keyed"): ("right", "Stripe takes an idempotency key on a refund as on a charge: the "
                                       "claim keeps copies apart, the key makes Stripe replay, and the "
                                       "fenced commit books the refund once."),
        ("balance", "overwrite"): ("wrong", "adding to a balance is the opposite of an overwrite: every "
                                            "repeat adds again."),
        ("balance", "claim_first"): ("wrong", f"a failure between the claim and the update loses the update "
                                              f"without a sound ({lost})."),
        ("balance", "transaction"): ("right", "the done record (written only if absent) and the balance "
                                              "change land together or not at all, in one call."),
        ("balance", "keyed"): ("more than needed", "safe: its commit writes the done record and the booking "
                                                   "as one item. But its lease and provider key guard a "
                                                   "call outside your table, and here there is none."),
        ("chat", "overwrite"): ("wrong", "each post adds a message to the channel: posting again is a "
                                         "second message."),
        ("chat", "claim_first"): ("right", "it never posts twice, and a late post is harmless: a job "
                                           "that finds the claims never finished posts what a "
                                           "failure lost."),
        ("chat", "transaction"): ("wrong", f"the post goes to the chat API: {outside}."),
        ("chat", "keyed"): ("wrong", f"keyed leans on the provider's key, and this API has none: a retry "
                                     f"after a lost answer posts again (robust, a record without a key, "
                                     f"double charges in {robust.count('double_charge')} of {n} rows)."),
    }
    return table[(system, choice)]


def check_choices(choices: Mapping[str, str], rows: Iterable[PatternRow]) -> str:
    """The exercise's check: each system's choice, right or not, and why."""
    unknown = sorted(set(choices) - set(SYSTEMS))
    if unknown:
        return f"unknown systems {unknown}: answer for {', '.join(SYSTEMS)}"
    if unfilled(dict(choices)):
        return not_yet(f"write one of {', '.join(CHOICES[:-1])} or {CHOICES[-1]} for each system")
    r = _by_name(rows)
    lines, right = [], 0
    for system in SYSTEMS:
        choice = choices.get(system, "")
        if choice not in CHOICES:
            lines.append(f"{system}: choose one of {', '.join(CHOICES)} (got {choice!r})")
            continue
        verdict, why = _why(system, choice, r)
        right += verdict == "right"
        lines.append(textwrap.fill(f"{system} -> {choice}: {verdict}. {why[0].upper()}{why[1:]}", WIDTH,
                                   subsequent_indent="  "))
    lines.append("All four right." if right == len(SYSTEMS) else
                 f"{right} of {len(SYSTEMS)} right: the decision diagram's first question is the one to ask again.")
    return "\n".join(lines)


# -- chapters 09 and 10: the template's two profiles, its settings and alarms, the reconciliation -
#: CloudWatch custom metrics: "$0.30" per metric-month for the first 10,000, and 10 metrics free
#: (https://aws.amazon.com/cloudwatch/pricing/, its table drawn by a script; quoted by
#: https://github.com/nishinoshake/aws-rough/issues/37 and api-evangelist's cloudwatch plans).
METRIC_MONTH_USD = 0.30
FREE_METRICS = 10


def expanded_template(parameters: Mapping[str, str] | None = None) -> dict[str, Any]:
    """template.yaml after the SAM transform (with a placeholder code location, which the
    deploy fills in with the packaged core), for `parameters`."""
    return tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"), dict(parameters or {}))


def template_summary(real_aws: bool = False) -> str:
    """Chapter 09's first lines: the template's parameters, each profile's resources after the SAM
    transform; then whether the chapter's real-AWS cells run."""
    counts = ", ".join(f"{len(tp.resolve(expanded_template(), {'Profile': name})['Resources'])} resources in {name}"
                       for name in tp.PROFILES)
    return (f"template.yaml: {len(tp.load()['Parameters'])} parameters, {counts} after the SAM transform\n"
            f"real AWS cells {'ON' if real_aws else 'off'}")


def production_summary() -> str:
    """Chapter 10's first line: the production profile's resources and alarms."""
    prod = tp.resolve(expanded_template(), {"Profile": "prod"})
    return f"production: {len(prod['Resources'])} resources after the SAM transform, {len(alarms('prod'))} alarms"


def profile_table() -> pd.DataFrame:
    """Both profiles resolved as CloudFormation would: what differs between them."""
    rows = []
    for name in tp.PROFILES:
        cfn = tp.resolve(expanded_template(), {"Profile": name})
        res, fn = cfn["Resources"], cfn["Resources"][tp.FUNCTION]["Properties"]
        ledger = res["LedgerTable"]["Properties"]
        rows.append({"profile": name, "ledger on delete": res["LedgerTable"]["DeletionPolicy"],
                     "PITR": ledger["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
                     "protected": ledger["DeletionProtectionEnabled"],
                     "provider": "stand-in table" if "ProviderTable" in res else "Stripe",
                     "handler (in idem.core)": fn["Handler"].removeprefix("idem.core."),
                     "reserved": fn.get("ReservedConcurrentExecutions", "-"),
                     "log days": res["ChargeFunctionLogs"]["Properties"]["RetentionInDays"]})
    return pd.DataFrame(rows).set_index("profile")


def production_settings(part: int = 0, parts: int = 1) -> str:
    """The production profile's own parameters: name, default, and what each is for, in full
    (`part` of `parts` of them, so that no output runs past a page)."""
    demo = ("Profile", "HandlerMode", "FailurePoint", "FailTimes")
    lines = []
    for name, spec in tp.load()["Parameters"].items():
        if name in demo:
            continue
        what = " ".join(str(spec["Description"]).removeprefix("prod: ").split())
        default = f" (default {spec['Default']})" if spec.get("Default", "") != "" else " (no default)"
        lines.append(textwrap.fill(f"{name}{default}: {what}", WIDTH, subsequent_indent="    ", break_on_hyphens=False))
    size = -(-len(lines) // parts)
    return "\n".join(lines[part * size:(part + 1) * size])


def _show_fates(lines: list[str]) -> None:
    print("\n".join(lines))


def outage_fates(outage_hours: float = 2.0) -> list[str]:
    """Chapter 10: an order uploaded as a provider outage starts, in each profile."""
    from ..lessons.shipping.production import outage_fate
    return [outage_fate(outage_hours, profile) for profile in ("prod", "demo")]


def outage_explorer(outage_hours: float = 2.0) -> widgets.Widget:
    """Slide the outage's length; see where an order uploaded at its start ends, in each profile."""
    control = widgets.FloatSlider(value=outage_hours, min=0, max=24, step=0.25, description="outage (h)",
                                  style={"description_width": "initial"})
    return make_explorer({"outage_hours": control}, outage_fates, _show_fates)


outage_explore = pinned(outage_fates, _show_fates, "Where an order ends after an outage (the explorer's twin).")


def role_table(parameters: Mapping[str, str], granted_to: Callable[[dict[str, Any]], set[tuple[str, str]]],
               seen: set[tuple[str, str]], lambda_does: set[tuple[str, str]]) -> pd.DataFrame:
    """Every permission the demo's role grants or the code needs: called by the code (seen on
    moto), needed by Lambda itself, granted by the role."""
    demo = tp.resolve(expanded_template(parameters), dict(parameters))
    granted = granted_to(demo)
    rows = [{"permission": f"{action} on {resource}",
             "code calls it": "yes" if (action, resource) in seen else "Lambda does",
             "role grants it": "yes" if (action, resource) in granted else "NO"}
            for action, resource in sorted(granted | seen | lambda_does)]
    return pd.DataFrame(rows).set_index("permission")


def custom_metrics_note(handler_metrics: int, reconciler_metrics: int) -> str:
    """The custom metrics the stack publishes, and what they cost beyond the free tier."""
    total = handler_metrics + reconciler_metrics
    return textwrap.fill(f"custom metrics: {handler_metrics} from the handler (one per outcome), {reconciler_metrics} from "
            f"the reconciliation = {total}; at ${METRIC_MONTH_USD:.2f} per metric-month after {FREE_METRICS} "
            f"free: ${max(0, total - FREE_METRICS) * METRIC_MONTH_USD:.2f} a month with the free tier, "
            f"${total * METRIC_MONTH_USD:.2f} without", WIDTH, subsequent_indent="    ")


def reconcile_on(deployment: Any) -> Any:
    """Run the stack's hourly reconciliation once, with the deployed function's own settings,
    over the first closed window after every charge and booking of `deployment` could land."""
    job = emulated.function_settings(deployment.clients["lambda"], deployment.outputs["ReconcileFunctionName"])
    env = {**job["env"], "AWS_LAMBDA_FUNCTION_NAME": job["name"]}
    lag = int(env["MAX_EVENT_AGE_SECONDS"]) + reconcile_job.MAX_INVOCATION_SECONDS
    return reconcile_job.run(env, fake_session(), deployment.clock.now() + lag + 3600, say=lambda line: None)


def lose_upload(deployment: Any, key: str) -> str:
    """Put an order file into the stack's bucket, on the stack's clock, as if S3's event for it
    were lost: the function never runs, so only the reconciliation's list of uploads sees it.
    Returns the upload's s3:// address."""
    from ..deploy.local.moto_target import s3_lambda_notifications
    from ..sim.runtime import on_clock

    with s3_lambda_notifications(), on_clock(deployment.clock):  # the notification goes nowhere
        upload = deployment.world().upload(key, body=json.dumps({"order_id": key, "amount_cents": 500}).encode())
    return f"s3://{upload.bucket}/{upload.key}"


def reconcile_line(report: Any) -> str:
    """One reconciliation report in two lines: its window; the three sides it counted, and what it
    found."""
    return (f"window {report.to_dict()['window']}:\n  {report.uploads} upload(s), {report.ledger_lines} "
            f"ledger line(s), {report.provider_charges} charge(s), {report.differences} difference(s)")


def _short(text: str) -> str:
    """An upload by its key (`s3://bucket/alice/order-1.txt?versionId=...` -> `alice/order-1.txt`),
    an order key by its first 8 hex digits: the frame fits the page, the report keeps them whole."""
    if text.startswith("s3://"):
        text = text.split("?", 1)[0].split("/", 3)[-1]
    head, sep, digest = text.rpartition("#")
    return f"{head}#{digest[:8]}\u2026" if sep and len(digest) == 64 else text


def reconcile_frame(report: Any) -> pd.DataFrame:
    """A report's findings, one row each: what kind (an upload with no line, a charge with no
    line, ...), the upload or charge it is about, and the command that settles it (`idem`, the
    installed script of `python -m idem`; order keys shortened: the report holds them whole)."""
    rows = [{"finding": reconcile_job.KINDS[f.kind], "about": _short(f.what),
             "settle with": " ".join(_short(word) for word in f.command.removeprefix("python -m ").split())}
            for f in report.findings]
    return Whole(rows, columns=["finding", "about", "settle with"])


def stack_metrics(report: Any = None) -> str:
    """The stack's custom metrics, counted from what it prints: the handler's metric document
    (one per outcome) and the reconciliation's (one per number in `report`, an empty window's
    report by default)."""
    report = reconcile_job.compare([], [], 0, 3600) if report is None else report
    handler = len(keyed_events.metrics_document({}, "ChargeFunction", 0)["_aws"]["CloudWatchMetrics"][0]["Metrics"])
    line = json.loads(reconcile_job.emf(report, "ReconcileFunction", 0))
    return custom_metrics_note(handler, len(line["_aws"]["CloudWatchMetrics"][0]["Metrics"]))


# -- chapter 09's exercise: a poison event through the deployed keyed stack, predicted -------------
STACK_PREDICTIONS = ("invocations", "ledger entries", "events in the failure queue", "the record's status")
STACK_WHY = {
    "invocations": "a function error is retried by Lambda: count the first attempt and each retry the "
                   "stack's EventInvokeConfig allows.",
    "ledger entries": "every attempt fails after the charge and before the commit, so nothing is "
                      "booked: the reconciliation job finds the charge.",
    "events in the failure queue": "after Lambda's retries the stack's EventInvokeConfig sends "
                                   "the event to FailureQueue, where a redrive can find it.",
    "the record's status": "no attempt reached its commit, and each failed attempt gave its lease back "
                           "before it raised. Which status did the claim write, and who would change it?",
}


def check_stack_prediction(prediction: Mapping[str, Any], result: Any) -> str:
    """Chapter 09's exercise: what chapter 00's verdict for a poison event does not say (the
    invocations, the ledger entries, the failure queue, the order record's status) through the
    keyed stack, against `lab.try_stack`'s result. A wrong prediction gets the reason, not the value."""
    missing = [name for name in STACK_PREDICTIONS if name not in prediction]
    if missing:
        return f"Predict every one: {', '.join(missing)} has no prediction."
    if unfilled(dict(prediction)):
        return not_yet("my_prediction holds no prediction: fill in each of its four places")
    measured = {"invocations": len(result.attempts), "ledger entries": result.ledger_charges,
                "events in the failure queue": result.dlq, "the record's status": result.record}
    lines = []
    for name in STACK_PREDICTIONS:
        guess = prediction[name]
        if unfilled(guess):
            lines.append(f"{name}: no prediction yet.")
        elif guess == measured[name] or (isinstance(guess, str) and guess.strip().lower() == str(measured[name])):
            lines.append(f"{name}: right, {measured[name]}.")
        else:
            lines.append(f"{name}: not {guess}: {STACK_WHY[name]}")
    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  ") for line in lines)
