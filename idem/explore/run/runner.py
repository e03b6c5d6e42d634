"""Run schedules in one world, one upload (and account) each, and count what each left where it landed."""
from __future__ import annotations

import contextlib
import functools
import json
import random
from typing import Any, Sequence

from ...core.clock import VirtualClock
from ...sim.sessions import inherit_invocations, release_handler_threads
from ...sim.faults import FINAL_REFUSALS
from ...sim.fastload import fewer_collections
from ...sim.runtime.handler_guard import no_subprocesses
from ...sim.runtime import LocalLambda, loopback_only, on_clock, schedule_deadline
from ...sim.stripe.server import loopback_stripe, seed_customer
from ...sim.world import pk_text
from ...sim.writes import count_same_effects_once
from ..errors import CheckCouldNotFinish, CheckInputError
from ..families import accounts, sqs_timed, timed, timings
from ..families.schedule import Schedule
from ..judge import money, state as states
from ..judge.books import Books, refused_lines
from ..judge.effects import (QUEUE_SENDS, TOPIC_PUBLISHES, delivered, failures_for, judge_sqs,
                             lines_booked, per_order, per_upload)
from ..judge.result import Result
from ..judge.verdicts import BOOKS as LINES, MONEY as CHARGES, judge_upload, judge_uploads
from ..target.target import Target
from . import own_writes, triggers, worlds
from .uploads import delivers
from .fastcalls import fast_calls

#: Real seconds one schedule may run before the check gives up on it (exit 3).
SCHEDULE_SECONDS = 60.0  # a schedule takes well under a second; 60 s keeps a loaded CI machine from exit 3
CLEAN_RUN = 99_999  # the clean run's upload number


def _env_for(world: Any, target: Target) -> dict[str, str]:
    """What the handler finds in its environment: the world's resources, then the user's settings."""
    return {**world.env(), "BUCKET": world.bucket, "FAILURE_QUEUE_URL": world.queue_url,
            "AWS_DEFAULT_REGION": "us-east-1", **dict(target.env)}


def _runtime(world: Any, target: Target, schedule: Schedule, provider_factory: str, seed: int) -> Any:
    runtime = LocalLambda(world, _env_for(world, target), fault=schedule.fault, retries=schedule.retries,
                          handler=target.spec, provider_factory=provider_factory, seed=seed,
                          # a template's function with no DLQ or OnFailure destination: a failed event is
                          # discarded (docs/check_from_a_template.md P16)
                          failure_destination=bool(target.deployed.failure_destination) if target.deployed else True,
                          **(target.deployed.runtime_options() if target.deployed else {}))
    runtime.retry_delay = timings.retry_delay(schedule.timing, runtime.max_event_age)  # drawn from its range
    # how long EventBridge retries the function as a rule target: the template's policy, or its default
    runtime.eventbridge_window = (target.deployed.eventbridge_window() if target.deployed
                                  else timings.EVENTBRIDGE_RETRY_AGE)
    return runtime


def _deliver(runtime: Any, event: dict[str, Any], schedule: Schedule, trigger: str = "s3") -> None:
    runtime.send(event)
    if schedule.delivery == "duplicate":  # the copy: drawn from its documented range (idem.explore.families.timings)
        runtime.send(event, at=timings.copy_delay(schedule.timing, trigger, runtime.max_event_age,
                                                  runtime.eventbridge_window))
    elif schedule.delivery == "concurrent":
        runtime.during(schedule.copy_at, lambda: runtime.send_now(event), in_flight=schedule.slow)
    elif schedule.slow:  # the slow call alone: no copy comes to do the work
        runtime.during(schedule.copy_at, lambda: None, in_flight=True)


#: what every order file of the check's own says its charge moves (docs/one_charge_per_order.md)
ORDER_PRICE = money.Price(1250, "usd")


def order_body(number: int, nth: int = 1) -> bytes:
    """The order file the check uploads for schedule `number` (docs/one_charge_per_order.md): JSON naming its order,
    `check-00001` for the first, `check-00001-2` for a second order at the same name. The same
    bytes every run; an uploader's retried PUT sends these bytes again."""
    order_id = f"check-{number:05d}" + (f"-{nth}" if nth > 1 else "")
    return json.dumps({"order_id": order_id, "amount_cents": ORDER_PRICE.cents,
                       "currency": ORDER_PRICE.currency}).encode()


#: How long a PaymentIntent created or changed at the check's loopback Stripe stays out of its search:
#: Stripe's search "can be up to an hour behind during outages" (https://docs.stripe.com/api/payment_intents/search;
#: "Don't use search for read-after-write flows", https://docs.stripe.com/search#data-freshness). The
#: check takes the documented bound, as docs/money_contract.md's margin does: a handler that searches
#: before charging again is right only if it is right during an outage. List and retrieve are not delayed.
SEARCH_LAG_SECONDS = 3600.0


def _charge_of(intent: Any) -> str:
    """The stand-in's charge id of a loopback PaymentIntent (`pi_X` is charge `ch_X`)."""
    return "ch_" + str(intent).removeprefix("pi_")


def _charge_id(item: dict[str, Any]) -> str:
    """The charge id of a provider's charge record (`pk` = `charge#ch_X`)."""
    return str(item.get("pk", "")).removeprefix("charge#")


def all_held(charges: Sequence[dict[str, Any]], on_hold: set[str]) -> bool:
    """Whether there are charges and every one of them is an uncaptured hold."""
    return bool(charges) and all(_charge_id(c) in on_hold for c in charges)


def uncaptured(stripe_server: Any) -> set[str]:
    """The charges of PaymentIntents at the loopback Stripe still waiting for their capture
    (capture_method=manual, status requires_capture): authorized and held on the card, no money
    collected ("don't capture the funds until later": https://docs.stripe.com/payments/place-a-hold-on-a-payment-method)."""
    account = getattr(stripe_server, "account", None)
    if not hasattr(account, "intents"):
        return set()
    return {_charge_of(intent["id"]) for mode in account.modes
            for intent in account.intents(mode) if intent.get("status") == "requires_capture"}


def kept_charges(charges: list[tuple[str, dict[str, Any]]], stripe_server: Any,
                 holds: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The provider's charges as money kept: a charge refunded in full at the loopback Stripe, or whose
    payment failed after it was answered (a bank debit `processing`, then failed), moved no money and is
    left out; one refunded in part moved what is left of it. Stripe replays a key's first answer even
    after its charge was refunded ("Subsequent requests with the same key return the same result":
    https://docs.stripe.com/idempotency), so a handler that refunds on a failure and books the replay
    on its retry books money it gave back (https://docs.stripe.com/api/refunds/create). An uncaptured
    hold (`uncaptured`) moved no money either: it is left out unless `holds` (the clean run's own
    charges were holds: a handler that authorizes for a later job to capture, whose effect is the
    hold); a capture of part of it kept that part (`amount_received`)."""
    refunded: dict[str, int] = {}
    account = getattr(stripe_server, "account", None)
    for mode in getattr(account, "modes", {}) or {}:
        for refund in stripe_server.account.refunds(mode):
            if refund.get("status") == "succeeded":
                charge = _charge_of(refund["payment_intent"])
                refunded[charge] = refunded.get(charge, 0) + int(refund["amount"])
        for intent in account.intents(mode) if hasattr(account, "intents") else ():
            if intent.get("capture_method") == "manual" and intent.get("status") == "succeeded":
                charge = _charge_of(intent["id"])  # captured in part: the rest released
                refunded[charge] = refunded.get(charge, 0) + int(intent["amount"]) - int(intent["amount_received"])
    held = set() if holds else uncaptured(stripe_server)
    kept = []
    for where, item in charges:
        charge_id = _charge_id(item)
        if item.get("failed") or charge_id in held:
            continue
        back = refunded.get(charge_id, 0)
        if back and back >= int(item.get("amount", 0)):
            continue
        kept.append((where, {**item, "amount": int(item["amount"]) - back} if back else item))
    return kept


def order_prices() -> list[money.Price] | None:
    """What the schedules' order files say a charge moves: the check's own file's price, or with
    `--object` the reader's file's (and its second order's), None if a file states no amount."""
    from .objects import CURRENT

    if CURRENT is None:
        return [ORDER_PRICE]
    return money.prices_of([CURRENT.body] + ([CURRENT.second] if CURRENT.second is not None else []))


def _overwrite(runtime: Any, world: Any, first: Any, schedule: Schedule, number: int,
               trigger: str = "s3") -> list[tuple[Any, dict[str, Any], int]]:
    """The first upload's event, and a second upload of the same name: a second order (new bytes)
    or the uploader's retried PUT (the same bytes: the same order, a new version, request id and
    sequencer, the same eTag), a new version or, in an unversioned bucket, the same key with a new
    sequencer. Its event is sent 5 s after the first upload's invocations are over, while the first
    invocation sits at `copy_at`, or (`between`) after the first invocation failed, halfway to
    Lambda's retry. Runs them all; returns each upload, its event and its order."""
    order = 1 if schedule.second == "retried_put" else 2
    uploads = [(first, triggers.event_for(trigger, world, first), 1)]

    def second() -> dict[str, Any]:
        obj = world.upload(first.key, order_body(number, order))
        uploads.append((obj, triggers.event_for(trigger, world, obj), order))
        return uploads[-1][1]

    runtime.send(uploads[0][1])
    if schedule.delivery == "concurrent":
        runtime.during(schedule.copy_at, lambda: runtime.send_now(second()))
        runtime.run()
    elif schedule.delivery == "between":
        runtime.at(runtime.retry_delay(1, 0.0) / 2, lambda: runtime.send_now(second()))  # before the retry
        runtime.run()
    else:
        runtime.run()
        world.clock.advance(5.0)
        runtime.send(second())
        runtime.run()
    return uploads


def run_batch(target: Target, schedules: Sequence[Schedule], baseline: dict[str, int],
              effects: Sequence[str], provider_factory: str, first: int | Sequence[int] = 0,
              books: Books | None = Books(), trigger: str = "s3", clean_state: Any = None,
              clean_prices: Sequence[money.Price] | None = None, pays_by_link: bool = False,
              holds: bool = True) -> list[Result]:
    """Run `schedules` in one world (this process's, kept between batches: `idem.explore.run.worlds`),
    one upload (and account) each, numbered from `first` (or numbered `first`, a number for
    each); count each schedule's effects where they landed, right after it ran, on its own clock. Writes named as effects are
    judged by the state they leave against `clean_state` (`idem.explore.judge.state`); the charges, by
    who pays and how much against `clean_prices`, what the clean run charged, and (`pays_by_link`: the
    clean run charged the customers the check linked) against those customers (`idem.explore.judge.money`).
    `holds`: an uncaptured hold at the loopback Stripe counts as a charge (the clean run, and a
    schedule whose clean run's charges were holds), else it moved no money (`kept_charges`)."""
    judged = states.state_effects(effects)
    results = []
    versioned = not schedules or schedules[0].overwrite != "unversioned"
    if any((s.overwrite != "unversioned") != versioned for s in schedules):
        raise ValueError("one batch runs in one bucket: versioned or unversioned schedules, not both")
    over_stripe = (functools.partial(loopback_stripe, search_lag_seconds=SEARCH_LAG_SECONDS)
                   if target.provider == "stripe" else (lambda _: contextlib.nullcontext()))
    numbers = range(first, first + len(schedules)) if isinstance(first, int) else first
    # inherit_invocations: installed for the rest of the process, so a thread a dead invocation left running
    # stays its invocation's even after the batch (sessions)
    with fewer_collections(), fast_calls(), inherit_invocations(), worlds.world_for(versioned, numbers) as kept, \
            loopback_only() as refused, no_subprocesses() as spawned, over_stripe(kept.world) as stripe_server:
        world, charges_seen, lines_seen = kept.world, kept.charges_seen, kept.lines_seen
        env = _env_for(world, target)
        table = env.get(books.table_env) if books else None
        if books and not table:
            raise CheckInputError(f"--books {books}: the handler's environment has no {books.table_env}; "
                                  "name a table the check provisions (LEDGER_TABLE) or pass --books none")
        if table:  # lines already there are no schedule's of this batch: a template's own table is one
            # for every world of this process (its names are the template's), so another world's
            # schedules may have booked in it since this world's last batch
            lines_seen |= {pk_text(item.get("pk")) for item in triggers.items_with(world, table, books.attribute,
                                                                                  lines_seen)}
        # over the loopback Stripe, each linked customer exists there with a saved default card
        link = accounts.linker(world, env.get("LEDGER_TABLE"), target.module,
                               (lambda customer: seed_customer(stripe_server, customer_id=customer))
                               if stripe_server is not None else None)
        for number, schedule in zip(numbers, schedules):
            # t=0 on its own clock, 2 minutes before midnight (the family zones: hours earlier)
            world.clock = VirtualClock(timings.CHECK_START - timed.started_earlier(schedule))
            random.seed(f"idem-check/{number}")  # botocore's retry backoff (and the handler's draws): seeded
            # moto's version and message ids from the schedule's number: the same whichever
            # world, batch or process it runs in, and after whichever schedules
            world.seed_ids(number)
            # its request ids from its number too
            runtime = (triggers.sqs_runtime(world, _env_for(world, target), schedule, target.spec, provider_factory,
                                            number, target.deployed)
                       if trigger == "sqs" else _runtime(world, target, schedule, provider_factory, number))
            runtime.watch.effects = set(effects)
            # the objects it writes where its trigger listens come back to it (P23): under SQS as messages
            own = own_writes.install(runtime, world, trigger)
            # a plain name, one that needs decoding (the family names) or the longest S3 allows where
            # the schedule says (a handler that cannot take it fails visibly there, and only there)
            obj = world.upload(triggers.name_for(number, schedule), order_body(number),
                               **({"by": schedule.upload} if schedule.upload else {}))  # the family uploads: POST, multipart
            link(obj.key)  # the account's customer, for a function that reads the mapping (idem.explore.families.accounts)
            uploads: list[tuple[Any, dict[str, Any], int]] = []
            batch: list[Any] = []
            with schedule_deadline(SCHEDULE_SECONDS, schedule.label()):
                if trigger == "sqs":  # a batch: the checked upload, its neighbour (`again`: the first's retried PUT)
                    batch = [obj] + triggers.neighbours(trigger, world, number, order_body)
                    again = (lambda obj=obj, number=number: world.upload(obj.key, order_body(number, 1))) if schedule.overwrite else None
                    batch = sqs_timed.deliver_batch(runtime, world, batch, schedule, again, number, order_body, link)
                elif schedule.later is not None:
                    uploads = timed.run(runtime, world, obj, schedule, number, trigger, order_body, link)
                elif schedule.overwrite:
                    uploads = _overwrite(runtime, world, obj, schedule, number, trigger)
                else:
                    uploads = [(obj, triggers.event_for(trigger, world, obj), 1)]
                    if delivers(schedule.upload or "PutObject"):  # else no event: the trigger takes no such upload
                        _deliver(runtime, uploads[0][1], schedule, trigger)
                    runtime.run()
                runtime.end()  # its invocations' threads left running act no more: judged now (LocalLambda.end)
            if refused:
                raise CheckCouldNotFinish(f"the handler called {refused[0]}, outside the check's local AWS: "
                                          "the check refuses every socket but the loopback "
                                          f"(schedule: {schedule.label()})")
            if spawned:  # idem.sim.runtime.handler_guard: another process escapes every boundary
                raise CheckCouldNotFinish(f"the handler started a process ({spawned[0]}): what it does escapes "
                                          "every boundary the check watches; do the work in the function itself")
            count_same_effects_once(runtime.watch)  # the same execution answered again is one effect
            with on_clock(world.clock):  # what the handler's calls wrote carries the virtual time
                counted: dict[str, int] = {}  # the schedule's: every upload's invocations summed
                for (name, _), n in runtime.watch.effect_counts.items():
                    if name not in QUEUE_SENDS:
                        counted[name] = counted.get(name, 0) + n
                for name in set(effects) & set(QUEUE_SENDS):
                    counted[name] = sum(delivered(world, url) for url in runtime.watch.queues
                                        if url != world.queue_url)
                for name in sorted(set(effects) & set(TOPIC_PUBLISHES)) if runtime.watch.topics else ():
                    # each topic's queue is drained once: both calls' messages go to the first name
                    counted[name] = counted.get(name, 0) + sum(delivered(world, url)
                                                               for url in runtime.watch.topics.values())
                calls = dict(counted)
                objs = batch if trigger == "sqs" else [o for o, _, _ in uploads]
                left = states.read(world, runtime.watch, judged, states.Names(number, objs, world.bucket, trigger)) \
                    if judged else []
                orders = [1] if trigger == "sqs" else [o for _, _, o in uploads]
                by_state = states.judge(clean_state, left, judged, baseline, calls, orders,
                                        renamed=timed.renamed(schedule)) \
                    if judged and clean_state is not None else None
                if by_state:
                    counted.update(by_state.counts)
                made = world.provider_charges()
                kept = kept_charges(made, stripe_server, holds)
                on_hold = uncaptured(stripe_server)
                # a charge that kept no money is never counted, in this schedule or a later one (the
                # loopback Stripe that knows of its refund is this batch's; the world outlives it)
                charges_seen |= {where for where, _ in made} - {where for where, _ in kept}
                if trigger == "sqs":  # a batch of uploads: each judged on its own money
                    new = [item for where, item in sorted(kept, key=lambda found: found[0])
                           if where not in charges_seen]
                    keys = [o.key for o in batch]
                    results.append(judge_sqs(world, runtime, schedule, batch, counted, baseline, table,
                                             books, charges_seen, lines_seen, kept,
                                             own_keys=own.written(keys)))
                    results[-1].own_writes = dict(own.deliveries)
                    results[-1].own_charges = own.charges_named(new, keys)
                    paid, wrong = money.judge(new, clean_prices, keys if pays_by_link else None,
                                              baseline.get(CHARGES, 0) // len(triggers.SQS_BATCH))
                    results[-1].verdict = money.worse(results[-1].verdict, paid)
                    results[-1].findings += wrong
                    results[-1].paid = money.prices_paid(new)
                    results[-1].paid_by_link = money.by_link(new, keys)
                    results[-1].held = all_held(new, on_hold)
                    if by_state:
                        results[-1].verdict = states.worse(results[-1].verdict, by_state, results[-1].dlq,
                                                           calls, baseline)
                        results[-1].findings += by_state.findings
                    results[-1].left = left
                    _asked(results[-1], runtime)
                    continue
                items = dict(kept)
                recorded = set(items) - charges_seen
                charges_seen |= recorded
                counted[CHARGES] = len(recorded)
                if table:
                    lines = lines_booked(world, table, books.attribute, lines_seen)
                    lines_seen |= lines
                    counted[LINES] = len(lines)
                dlqs = failures_for(world, [o for o, _, _ in uploads], own.written(o.key for o, _, _ in uploads))
            declined = schedule.fault is not None and schedule.fault.outcome in FINAL_REFUSALS
            if len(uploads) == 1:
                verdict, findings = judge_upload(counted, baseline, dlqs[0], declined=declined)
            else:  # judged per ORDER: an uploader's retried PUT is the same order again
                per, failed = per_order(per_upload(runtime, uploads, counted), dlqs, orders)
                for i, counts in enumerate(per if by_state else []):  # a write per order, by its state
                    for name in clean_state.by_state(judged):
                        landed = counts.get(name, 0) or states.landed_for_order(runtime.watch, uploads, orders, name, i)
                        counts[name] = states.order_count(by_state, name, landed, i, orders,
                                                          clean_state.ordering, baseline)
                # what only the schedule as a whole can count: the messages a queue, or an SNS FIFO topic, delivers
                shared = set(QUEUE_SENDS) | (set(TOPIC_PUBLISHES) if runtime.watch.topics else set())
                ordering = clean_state.ordering if clean_state is not None else "none"
                may_skip = [] if timed.renamed(schedule) else \
                    [i for i in range(len(per)) if states.skipped_by_rule(ordering, i, orders)]  # one name's uploads
                verdict, findings = judge_uploads(per, counted, baseline, failed, declined=declined, unit="order",
                                                  shared=shared, may_skip=may_skip)
            if by_state:
                verdict = states.worse(verdict, by_state, sum(dlqs), calls, baseline, len(set(orders)))
                findings = findings + by_state.findings
            new = [items[where] for where in sorted(recorded)]
            keys = [o.key for o, _, _ in uploads]
            paid, wrong = money.judge(new, clean_prices, keys if pays_by_link else None, baseline.get(CHARGES, 0))
            verdict, findings = money.worse(verdict, paid), findings + wrong
            results.append(Result(schedule, counted, sum(dlqs), verdict, runtime.attempts, findings, left=left,
                                  paid=money.prices_paid(new), paid_by_link=money.by_link(new, keys),
                                  held=all_held(new, on_hold),
                                  refused_lines=refused_lines(runtime.watch.invalid, table, books.attribute)
                                  + [f"{line}: its condition failed" for line in refused_lines(
                                      runtime.watch.conditions_failed, table, books.attribute)]
                                  if table and books else [],
                                  refused_charges=list(runtime.watch.refused),
                                  own_writes=dict(own.deliveries), own_charges=own.charges(runtime)))
            _asked(results[-1], runtime)
    release_handler_threads()  # a killed invocation's pool must not hold the process at exit
    return results


#: What a result keeps of each attempt's printed lines (the report reads the last few): a handler
#: printing a 1,000-line tail on every invocation must not keep it for every schedule.
RESULT_LOG_LINES = 20


def _asked(result: Result, runtime: Any) -> None:
    """Keep with a result the answers its run asked for (`idem.explore.run.reuse`), and the last
    RESULT_LOG_LINES of what each attempt printed."""
    result.reached = dict(runtime.watch.reached)
    # what each call asked (second_fault): the roles the arrivals were counted by
    result.roles = frozenset((b, role) for b, role, _ in runtime.watch.role_arrivals)
    result.retries_asked = frozenset(runtime.retries_asked)
    for attempt in result.attempts:
        del attempt.logs[:-RESULT_LOG_LINES]
