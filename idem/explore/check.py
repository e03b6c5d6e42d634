"""`idem check`: run any Lambda handler through every schedule the platform can produce for one upload.

    from idem.explore.check import check_handler
    report = check_handler("my_function:lambda_handler", effects=["sqs:SendMessage"])
    assert report.holds, report.explain()

The handler is an ordinary `(event, context)` function that uses boto3, and a payment
provider client it builds with a factory function (`make_provider` by default) that the
check replaces with the workbook's provider stand-in. Nothing in it needs to know it is
being checked: faults happen at its calls (see `idem.sim.boundary`).

How it works:
1. One clean run discovers the boundaries the handler reaches: every AWS call and
   provider call it makes, in order, and the moment it returns.
2. Every schedule is then built from them, in families (`idem.explore.families`, DIMENSIONS):
   - faults, exhaustive: a fault (an exception before or after a call, the process dying,
     or the provider's own answers) on any set of arrivals, S3 delivering the event once,
     twice, or a second copy while the first invocation sits at any boundary, and Lambda
     retrying 0-2 times. Schedules that can only be another schedule's twin are left out.
   - overwrite, bounded: a second upload of the same name, either a second order (new bytes)
     or the uploader's retried PUT of the same order (the same bytes: a new version, request id
     and sequencer, the same eTag), in a versioned and an unversioned bucket, after the first,
     while the first invocation sits at any boundary (no fault), or between the first's failed
     attempt and Lambda's retry (an exception or a crash at any boundary), for each retry
     setting; and a second order at a name of S3's longest (1,024 bytes);
   - slow, bounded: one call of the first invocation stays in flight until 1 s before its
     deadline (request side or answer side) and a copy of the event starts meanwhile, with
     no fault, for each retry setting. Time passes: every clock the handler reads moves.
   - late, retry_ends, again and accounts: time and accounts (`idem.explore.families.timed`); every delay is
     drawn from its documented range, on a clock that starts at 23:58 UTC (`idem.explore.families.timings`).
   - runs, bounded: one call failing several times in a row (`idem.explore.families.runs`). A lost answer
     after an AWS call is resent by botocore as the handler's client is configured, and the
     handler gets the resend's answer (`idem.sim.sdk_retries`); so is a charge sent with Stripe's SDK.
   - uploads: the clean run's order uploaded by POST and by a multipart upload (`idem.explore.families.upload_kinds`).
   - names: the clean run's upload at names that need URL-decoding (`idem.explore.families.key_decoding`).
   Every upload is an order file (`run.runner.order_body`), at a plain name, and its event carries what
   S3 sends: its own request id and x-amz-id-2, eTag, sequencer and
   version (`run.triggers.event_for`); every copy of one event is that same event.
3. Each schedule runs in the local runtime, on moto and a virtual clock. Each invocation runs in
   a thread of its own, so a crash is a kill (no except, finally or atexit of the handler runs:
   `idem.sim.runtime.invocation_thread._Run`); calls from the handler's own threads and asyncio tasks are its
   boundaries; time.sleep moves the clock, and a wait past the deadline is Lambda's timeout. Its effects are
   counted where they land: the charges in the provider's own record, the ledger lines in the
   handler's table (the books), and any AWS call named as an effect; a write named as an effect
   (DynamoDB PutItem ..., S3 PutObject ...) is judged by the state it leaves, against the clean
   run's (`idem.explore.judge.state`: the same item again is not a second effect). Money is judged per upload
   against the books (`idem.explore.judge.verdicts`): two charges, no charge, a charge with no line,
   a line with no charge, each named; with nothing in the failure queue, a silent break. Per
   ORDER (docs/one_charge_per_order.md): the charges and lines of an order's uploads must EQUAL the clean run's.
   The clean run is judged too: one that fails, or books other than one line per charge, or a charge
   whose ledger line DynamoDB refused as invalid while the handler went on (no line: books the
   default place would not otherwise judge), is the report (exit 1, with its timeline).

Exit codes of `python -m idem check`: 0 when nothing breaks, 1 when something does (the clean
run included), 2 for bad input (a module that is missing, a name that is not callable).
"""
from __future__ import annotations

import re

from dataclasses import replace
from typing import Any, Iterable, Sequence

from ..sim.faults import CHARGE_CALL
from ..sim.platform import eventual_reads
from ..sim.runtime.handler_guard import clean_run_hint, missing_setting
from ..sim.stripe.params import UNSERVED
from ..sim.world import ensure_moto, fake_client
from .errors import CheckInputError, CleanRunBreaks, as_tool_errors
from .families import accounts, family_choice, key_decoding, object_schedules, second_fault, timings, upload_kinds
from .families.build import DIMENSIONS, schedules_for, sqs_schedules
from .families.schedule import RETRIES, VERSIONING, Schedule
from .judge import money, state as states
from .judge.books import Books
from .judge.result import Result
from .judge.verdicts import BOOKS as LINES, MONEY as CHARGES, Verdict
from .report.check_report import CheckReport
from .run import objects, own_writes, reuse, runner, triggers, worlds
from .run.pool import Dispatch, processes
from .run.runner import CLEAN_RUN
from .sandbox.stand_ins import CANNOT_SERVE
from .target.deployed import Deployed
from .target.target import PROVIDERS, Target, resolve

#: the call that reads an upload's order file: a handler that never makes it prices orders its own way
READ_CALL = "s3:GetObject"


def check_handler(target: str, *, effects: Iterable[str] = (), env: dict[str, str] | None = None,
                  retries: Iterable[int] = RETRIES, provider_factory: str = "make_provider",
                  workers: int = 1, books: str | None = None, provider: str = "stand-in",
                  versioning: Iterable[str] = VERSIONING, trigger: str = "s3",
                  ordering: str = "none", reuse_runs: bool = True, deployed: Any = None) -> CheckReport:
    """Check a handler against every schedule; see the module docstring. `workers` > 1 runs
    batches in that many processes. `provider`: what the handler's provider factory returns,
    the stand-in or Stripe's SDK (keyed_stripe.StripeProvider) aimed at a loopback Stripe that
    keeps the stand-in's rules. `versioning`: the buckets a second upload of the same name is
    tried in (versioned, unversioned). `trigger`: s3, sqs or eventbridge (`idem.explore.run.triggers`).
    `ordering`: the handler's declared ordering rule, none or sequencer (`idem.explore.judge.state`).
    `reuse_runs`: a schedule whose answers an earlier run already gave gets that run's result
    (`idem.explore.run.reuse`); False runs every schedule (the tests compare the two). `deployed`: the
    function's settings as its template deploys it (`idem.explore.target.deployed`), for every run.
    Raises CheckInputError (bad input, exit 2) or CheckCouldNotFinish (exit 3)."""
    if provider not in PROVIDERS:
        raise CheckInputError(f"provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    try:
        trigger = triggers.check_trigger(trigger)
    except ValueError as bad:
        raise CheckInputError(str(bad)) from None
    resolved = replace(resolve(target, env), provider=provider, deployed=Deployed.of(deployed))
    if resolved.deployed and resolved.deployed.refusal(trigger):
        raise CheckInputError(resolved.deployed.refusal(trigger))
    effects = tuple(dict.fromkeys(effects))
    for name in effects:
        if ":" not in name or name.startswith(":") or name.endswith(":"):
            raise CheckInputError(f"effect {name!r} is not SERVICE:Operation (for example sqs:SendMessage)")
    retries = tuple(sorted(set(retries)))
    if not retries or any(r not in RETRIES for r in retries):
        raise CheckInputError("retries are MaximumRetryAttempts values: 0, 1 or 2 (got "
                              f"{', '.join(map(str, retries)) or 'none'})")
    where = Books.parse(books)
    if ordering not in states.ORDERINGS:
        raise CheckInputError(f"--ordering {ordering!r} is not one of {', '.join(states.ORDERINGS)}")
    versioning = tuple(dict.fromkeys(versioning))
    if any(v not in VERSIONING for v in versioning):
        raise CheckInputError(f"versioning is any of {', '.join(VERSIONING)} (got {', '.join(versioning)})")

    ensure_moto()
    _books_table_exists(resolved, where)
    try:
        return _check(resolved, effects, retries, provider_factory, workers, where, versioning, trigger, ordering,
                      reuse_runs)
    finally:
        worlds.close()  # this process's worlds (a worker's go with it)


def _check(resolved: Target, effects: tuple[str, ...], retries: tuple[int, ...], provider_factory: str,
           workers: int, where: Books | None, versioning: tuple[str, ...], trigger: str, ordering: str,
           reuse_runs: bool) -> CheckReport:
    """check_handler once its arguments are checked."""
    with as_tool_errors():
        try:
            crossed, baseline, clean = clean_run(resolved, effects, provider_factory, where, trigger)
        except CleanRunBreaks as wrong:
            clean = replace(wrong.result, clean=True)
            crossed = [c.boundary for a in clean.attempts for c in a.crossings]
            # the books' line says they were judged where the break is theirs (a line refused)
            judged = dict(clean.effects) if LINES in clean.effects else {}
            return CheckReport(resolved, effects, crossed, judged, [clean], where, trigger)
        retention = float(resolved.deployed.message_retention) if resolved.deployed else timings.RETENTION_DEFAULT
        sdk = resolved.provider == "stripe"  # Stripe's SDK called by the handler itself
        dead_letter = float(resolved.deployed.dead_letter_retention) if resolved.deployed else 0.0
        # Bob's file naming Alice's customer: for a function that reads the mapping, with the check's own file
        names_customer = accounts.reads_mapping(resolved.module) and objects.CURRENT is None
        found = object_schedules.kept((sqs_schedules(crossed, retries, retention, sdk, dead_letter, names_customer)
                                       if trigger == "sqs"
                                       else schedules_for(crossed, retries, versioning, trigger, sdk,
                                                          float(resolved.deployed.failure_retention) if resolved.deployed
                                                          else timings.RETENTION_DEFAULT, names_customer))
                                      + upload_kinds.schedules(Schedule, retries)
                                      + key_decoding.schedules(Schedule, retries, trigger), trigger, CheckReport)
        try:  # a test knob: only some families (idem.explore.families.family_choice)
            found = family_choice.chosen(found, DIMENSIONS)
        except ValueError as bad:
            raise CheckInputError(str(bad)) from None
        clean_state = _clean_state(resolved, effects, provider_factory, where, trigger, ordering)
        prices = money.clean_prices(clean.paid)  # every schedule's charges move what the clean run's did
        with processes(workers) as pool:
            # a schedule's number (its upload and account) is its place in `found`, whichever
            # batch and process it runs in, so the report does not depend on `workers`
            def args_of(batch: list[int]) -> tuple[Any, ...]:
                return (resolved, [found[i] for i in batch], baseline, effects, provider_factory, batch, where, trigger,
                        # and, where the clean run paid the customers the check linked (cus_<account> is the
                        # check's own: only a function reading its mapping finds it), go to those customers
                        clean_state, prices, clean.paid_by_link,
                        # and an uncaptured hold counts as a charge only where the clean run's charges were holds
                        clean.held)

            runs = Dispatch(found, pool, workers, args_of)
            results, made = reuse.run_once(found, runs) if reuse_runs else reuse.run_every(found, runs)
            # the second round: a call that only a first-round fault led to, failed too
            second = family_choice.chosen(second_fault.schedules(results, crossed, clean.roles), DIMENSIONS)
            if second:
                first, found = len(found), found + second  # numbered after the first round's (`args_of` reads it)
                second_runs = Dispatch(found, pool, workers, args_of)
                more, ran = (reuse.run_once(found, second_runs, start=first) if reuse_runs
                             else reuse.run_every(found, second_runs, start=first))
                results, made = results + more, made + ran
    report = CheckReport(resolved, effects, crossed, baseline, results, where, trigger, runs=made)
    # the clean run's price against its file's, for a handler that read the file (GetObject)
    read = any(c.boundary.call == READ_CALL for a in clean.attempts for c in a.crossings)
    report.notes = (money.file_note(clean.paid, runner.order_prices()) if read else []) + own_writes.note(clean)
    return key_decoding.judged(report)


def _books_table_exists(target: Target, books: Books | None) -> None:
    """A books table named by the handler's own settings (`--env`, its template, --setup) must be one
    the check's AWS has (the template's and --setup's are made by now): else bad input, before the
    clean run reads the books back. Unnamed, it is the check's own table (`LEDGER_TABLE`)."""
    name = dict(target.env).get(books.table_env) if books else None
    if not books or not name:
        return
    dynamodb = fake_client("dynamodb")
    try:
        dynamodb.describe_table(TableName=name)
    except dynamodb.exceptions.ResourceNotFoundException:
        left = (f"leave {books.table_env} to the check, which creates its own, " if books.table_env == "LEDGER_TABLE"
                else "")
        raise CheckInputError(f"the books' table {books.table_env}={name} names a table the check's AWS does not "
                              f"have: {left}create the table with --setup or --template, or pass --books none") from None


def discover(target: Target, effects: Sequence[str], provider_factory: str,
             books: Books | None = Books(), trigger: str = "s3") -> tuple[list[Any], dict[str, int], list[Any]]:
    """One clean run: the boundaries crossed, in order, the effects it had and its attempts."""
    crossed, baseline, result = clean_run(target, effects, provider_factory, books, trigger)
    return crossed, baseline, result.attempts


def clean_run(target: Target, effects: Sequence[str], provider_factory: str,
              books: Books | None = Books(), trigger: str = "s3") -> tuple[list[Any], dict[str, int], Result]:
    """`discover`, with the clean run's whole result (what it charged among it)."""
    # its upload's name is one no schedule uses: a queue's deduplication id made from it
    # must not drop a schedule's message
    with eventual_reads.fresh():  # the path the schedules are measured against: every read sees the latest
        (result,) = runner.run_batch(target, [Schedule(retries=0)], {}, effects, provider_factory, CLEAN_RUN, books,
                                     trigger)
    if not result.attempts:  # throttled until its maximum age: ReservedConcurrentExecutions 0 (throttles)
        raise CleanRunBreaks(replace(result, verdict=(Verdict.FAILED_VISIBLY if result.dlq else Verdict.SILENT_LOSS).value,
                                     findings=["the clean run never invoked the function: every attempt was throttled "
                                               "(no concurrency: ReservedConcurrentExecutions 0) until the event's "
                                               "maximum age"] + result.findings))
    # one invocation, or under --trigger sqs one per batch: a mapping with BatchSize 1 invokes the
    # function once per message of the clean run's batch (its boundaries are any invocation's); an
    # invocation of an object the function wrote itself is no order's (P23: named in the notes)
    ordered = [a for a in result.attempts if own_writes.own_key(a, result.own_writes) is None] or result.attempts
    attempt = next((a for a in ordered if a.failed), ordered[0])
    if attempt.failed and (where := missing_setting(attempt.error, attempt.traceback, dict(target.env))):
        name = attempt.error.split("'")[1]
        raise CheckInputError(f"the handler needs the setting {name}, which the check was not given "
                              f"({attempt.error} {where}): pass it with --env {name}=VALUE")
    if attempt.failed and CANNOT_SERVE in attempt.error:  # not the handler's fault: moto fails inside its own code
        cause = " ".join(attempt.error[attempt.error.index(CANNOT_SERVE):].split()).rstrip(".")
        raise CheckInputError(f"{cause}; the check cannot judge this handler")
    if attempt.failed and UNSERVED in attempt.error:  # not the handler's fault: the check's Stripe lacks the API
        unserved = re.search(r"\((?:GET|POST|DELETE): [^)]*\)", attempt.error)
        raise CheckInputError(f"the handler calls a Stripe API the check cannot answer ({attempt.error.split(' This ')[0]}): "
                              f"{unserved.group(0)[1:-1] if unserved else 'this request'} is not served. The check "
                              "judges charges made as PaymentIntents created and confirmed in one call "
                              "(stripe.PaymentIntent.create, or the provider it hands make_provider), and serves "
                              "their retrieve, list, search and capture, Customers, PaymentMethods and Refunds; "
                              "anything else (a separate confirm, the Charges API) is not modelled")
    if attempt.failed:  # the handler fails with no fault at all: its own answer, a break (exit 1)
        logs = "; ".join(attempt.logs[-2:])
        did = any(result.effects.get(name) for name in (CHARGES, LINES, *effects))
        verdict = ((Verdict.NEEDS_ATTENTION if result.dlq else Verdict.SILENT_MISMATCH) if did
                   else Verdict.FAILED_VISIBLY if result.dlq else Verdict.SILENT_LOSS).value
        raise CleanRunBreaks(replace(result, verdict=verdict, findings=[
            f"the clean run fails, before any fault: {attempt.error}" + (f" (its last log lines: {logs})" if logs else "")
            + clean_run_hint(attempt.error, attempt.traceback, trigger, dict(target.env))] + result.findings))
    first, again = result.own_charges
    if first and again:  # its own write came back to it and was charged as an order (P23)
        key = next(iter(result.own_writes.values()))
        orders = "its one order" if trigger != "sqs" else f"the {len(triggers.SQS_BATCH)} orders of its batch"
        sent = "sent it that object's event" if trigger != "sqs" else "sent that object's event to its queue"
        raise CleanRunBreaks(replace(result, verdict=Verdict.DOUBLE_CHARGE.value, findings=[
            f"the clean run charged {orders} {first + again} times: the function wrote {key!r} into the "
            f"bucket its trigger watches, S3 {sent} as for any upload "
            "(https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html), and it charged again; write it "
            "elsewhere, give the trigger a key filter that leaves it out, or skip such keys"] + result.findings))
    if result.verdict == Verdict.SILENT_LOSS.value:  # a message of the clean run's batch never charged
        raise CleanRunBreaks(result)
    if result.findings:  # a batch whose charges cannot be told apart by upload
        raise CheckInputError(f"--trigger {trigger}: {'; '.join(result.findings)}")
    lines, charges = result.effects.get(LINES, 0), result.effects.get(CHARGES, 0)
    if books is not None and lines and lines != charges:  # one ledger line per charge, on a clean run too
        raise CleanRunBreaks(replace(result, verdict=Verdict.SILENT_MISMATCH.value, findings=[
            f"the clean run booked {lines} ledger line{'s' if lines != 1 else ''} for {charges} "
            f"charge{'s' if charges != 1 else ''}: the books disagree with the money with no fault at all"]))
    if books is not None and charges and not lines and result.refused_lines:  # a line sent, refused, gone past
        raise CleanRunBreaks(replace(result, effects={**result.effects, LINES: 0},  # the books judged: none
                                     verdict=(Verdict.NEEDS_ATTENTION if result.dlq
                                              else Verdict.SILENT_MISMATCH).value, findings=[
            f"the clean run charged and booked no ledger line: DynamoDB refused the line it sent to "
            f"{books.table_env} ({result.refused_lines[0]}) and the handler went on; "
            + ("on a clean run nothing else writes there, so no attempt books it"
               if result.refused_lines[0].endswith("its condition failed")
               else "a request DynamoDB refuses as invalid is refused on every attempt")]))
    crossings = [c for a in result.attempts for c in a.crossings]
    made = sorted({call for a in result.attempts for call in a.calls}) + (
        [CHARGE_CALL] if any(c.boundary.call == CHARGE_CALL for c in crossings) else [])
    missing = [name for name in effects if not result.effects.get(name)]
    if missing:
        raise CheckInputError(f"--effect {', '.join(missing)} never happens on a clean run; the calls it "
                              f"makes are: {', '.join(made) or 'none'}")
    if not result.effects.get(CHARGES) and not effects and result.refused_charges:  # no attempt failed
        raise CleanRunBreaks(replace(result, verdict=Verdict.SILENT_LOSS.value, findings=[
            f"the clean run's charge was refused by the provider ({result.refused_charges[0]}) and the function "
            "returned success: the order is never charged, and nothing reaches the failure destination to tell a "
            "person. A refusal no retry can mend is still the order's failure: raise it (the event then reaches the "
            "failure destination after Lambda's retries), rather than log it and go on"] + result.findings))
    if not result.effects.get(CHARGES) and not effects:
        raise CheckInputError(f"{target.name} made no charge on a clean run and no --effect is named: "
                              "nothing to count. Does it build its payment client with make_provider "
                              "(else pass --provider-factory NAME), or name its effect with --effect?")
    baseline = dict(result.effects)
    if not baseline.get(LINES):
        if books is not None and books.named and baseline.get(CHARGES):
            raise CheckInputError(f"the clean run charged and booked no ledger line where --books {books} "
                                  "points: name where the handler books its charges, or --books none")
        baseline.pop(LINES, None)  # no books where the default points: only effects are judged
    return list(dict.fromkeys(c.boundary for c in crossings)), baseline, result


def _clean_state(target: Target, effects: Sequence[str], provider_factory: str, books: Books | None,
                 trigger: str, ordering: str) -> Any:
    """The clean run twice more, under two other numbers: what its judged writes
    leave, with what differs between the two left out (`idem.explore.judge.state.CleanState`). When no
    named effect is a write: None, or with a declared ordering rule an empty CleanState that carries
    it (a named effect counted per call may be skipped by it too: `judge_uploads`' may_skip)."""
    if not states.state_effects(effects):
        return states.CleanState(ordering=ordering) if ordering != "none" else None
    # both in one world, one after the other: the second's invocation ids, uploads and sequencers are
    # others, and its clock starts a day and 1.5 s later, so an id or a time the handler writes differs
    offsets = iter((0.0, 86_401.5))
    saved = runner.VirtualClock  # the clock each of run_batch's schedules starts on
    runner.VirtualClock = lambda *start: saved(saved(*start).start + next(offsets, 0.0))
    try:
        with eventual_reads.fresh():  # clean runs, as `clean_run`'s
            runs = [r.left for r in runner.run_batch(target, [Schedule(retries=0), Schedule(retries=0)], {}, effects,
                                                     provider_factory, CLEAN_RUN - 2, books, trigger)]
    finally:
        runner.VirtualClock = saved
    return replace(states.CleanState.of(*runs), ordering=ordering)
