"""The scheduled reconciliation: per window, uploads vs ledger lines vs the provider's charges.

template.yaml's ReconcileFunction runs `lambda_handler` every WINDOW_MINUTES (EventBridge
Scheduler). Each run resumes from a cursor stored in the ledger table (`CURSOR_KEY`) and takes
the closed windows after it, oldest first, one report each, moving the cursor past a window only
once its report is written. A window is compared three ways:

- uploads: the versions S3 holds that were written in the window (ListObjectVersions for a small
  bucket; past `MAX_LISTED_VERSIONS`, the newest S3 Inventory report that UPLOAD_INVENTORY names:
  the run that finds the bucket too big marks the cursor item, and every run after reads the
  inventory: see `inventory_uploads`);
- ledger lines: done records booked in the window, read by Query on the time-bucketed index
  `by_day` (partition `booked_day` = YYYY-MM-DD, sort `booked_at`), never a Scan; then each
  line's customer and currency and its account's customer mapping (`account#ACCOUNT`) by key;
- the provider's charges for THIS stack (charges.py): Stripe's search of the window,
  `metadata['idem_stack']:'NAME'` and its `created` range, then every charge ever made for each
  order charged or booked in the window (by the order's key in the metadata), and a line's older
  charge by its id; or the demo's stand-in table.

It reports (compare.py; KINDS, each with the command that settles it): an upload with no
line, a line with no charge, a charge with no line, an order charged more than once however far
apart its charges (refund all but the booked one), a line and its charge that disagree on the amount
or the currency, a line whose account does not map to its charge's customer, an order left in
needs_attention or sent again after it was booked asking another amount (the handler refuses it, the
record stays done), a charge still not settled when its window is judged (one finding), a record still
pending 3 days on whose PaymentIntent Stripe settled (lines.pending_before: its event was lost; every
window until a person settles it), and a refund
Stripe made in the window (in its Dashboard, not through `idem refund`) that the ledger does not
book (refunds.py: Stripe's Refunds list by `created`).

The window closes LAG seconds before now: the longest an upload can wait before its charge
(the buffer queue's retries, or Lambda's event age) plus the longest invocation, and more than
Stripe's search delay. Lines are read up to LAG past the window's end; only items whose own time
is inside the window are reported. The report is an object in REPORT_BUCKET (one per window)
plus EMF metrics in namespace `Idem` (the stack alarms when `Differences` is above zero).

Stripe's API is called with the standard library over HTTPS, so the function ships stdlib +
boto3 only, like the rest of the core.
"""
from __future__ import annotations

import calendar
import json
import os
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Callable, Mapping

import boto3

# The job's parts, by side; their names are re-exported here (one import for callers and tests).
from .charges import (CHARGED, LOOKUP_THREADS, MAX_CLAUSES, SEARCHES_PER_SECOND, STRIPE_API,  # noqa: F401
                                Fetch, Pace, _fetch_json, _order_of,
                                entry_of, order_charges, orders_query, retrieve_charge, standin_charges,
                                stripe_charges, stripe_query)
from .compare import MAX_STALE_CHECKS, STALE_PENDING_SECONDS, _settle_one, compare, stale_findings  # noqa: F401
from .lines import (CURSOR_KEY, DAY_INDEX, DAY_INDEX_ATTRIBUTES, INVENTORY_MARK,  # noqa: F401
                               MAPPING_PREFIX, PENDING_DAY, _cursor_item, advance_cursor, backfill_booked_day, days,
                               ledger_lines, line_terms, mark_inventory, pending_before, read_cursor, read_items,
                               reads_inventory, record_status)
from .refunds import booked_refunds, intent_of, refund_findings, refunded_of, unreadable, window_refunds
from .report import (DIMENSION, KINDS, NAMESPACE, Entry, Finding, UploadSeen,  # noqa: F401
                               WindowReport, day_of, emf, iso, window)
from .uploads import (MAX_LISTED_VERSIONS, TooManyVersions,  # noqa: F401
                                _parse_time, inventory_uploads, listed_uploads, newest_manifest, order_key, order_terms)

__all__ = [  # re-exported: callers and tests import the job's parts from here
    "CHARGED", "CURSOR_KEY", "DAY_INDEX", "DAY_INDEX_ATTRIBUTES", "DIMENSION", "Entry", "Fetch", "Finding",
    "INVENTORY_MARK", "KINDS", "MAX_STALE_CHECKS", "PENDING_DAY", "STALE_PENDING_SECONDS", "pending_before",
    "stale_findings", "LOOKUP_THREADS", "MAPPING_PREFIX", "MAX_CLAUSES", "MAX_LISTED_VERSIONS",
    "NAMESPACE", "Pace", "SEARCHES_PER_SECOND", "STRIPE_API", "TooManyVersions", "UploadSeen", "WindowReport",
    "advance_cursor", "backfill_booked_day", "compare", "day_of", "days", "emf", "entry_of",
    "inventory_uploads", "iso", "ledger_lines", "line_terms", "listed_uploads", "mark_inventory",
    "newest_manifest", "order_charges", "order_key", "order_terms", "orders_query", "read_cursor", "read_items",
    "reads_inventory", "record_status", "retrieve_charge", "standin_charges", "stripe_charges",
    "stripe_query", "window",
    # and the job's own
    "MAX_INVOCATION_SECONDS", "MAX_WINDOWS_PER_RUN", "RESERVE_MILLIS", "lag_of", "lambda_handler",
    "reconcile_window", "rerun", "run",
]

#: Lambda's longest invocation: a retry may book this long after it started.
MAX_INVOCATION_SECONDS = 900
#: At most this many windows per run, and none begun with less than RESERVE_MILLIS of the run
#: left (a stack catching up after days off catches up over several runs).
MAX_WINDOWS_PER_RUN = 24
#: A window at 100,000 orders a day spends about 176 s on its calls (idem/cost/reconcile_cost.py,
#: at assumed latencies; tests/test_reconcile_cost.py ties the two): one begun with less left would
#: be cut off by the 300 s timeout (no report, an error) instead of left to the next run.
RESERVE_MILLIS = 200_000


# -- one run -------------------------------------------------------------------------------------
def lag_of(env: Mapping[str, str]) -> int:
    """How long after an upload its charge may still be made and booked: RECONCILE_LAG_SECONDS,
    else Lambda's event age (MAX_EVENT_AGE_SECONDS), plus the longest invocation."""
    if env.get("RECONCILE_LAG_SECONDS"):
        return int(env["RECONCILE_LAG_SECONDS"])
    return int(env.get("MAX_EVENT_AGE_SECONDS") or 21600) + MAX_INVOCATION_SECONDS


def _commands(env: Mapping[str, str]) -> tuple[str, str]:
    """The runbook commands as a person types them for this stack."""
    where = ""
    if env.get("STACK_NAME"):
        where += f" --stack {env['STACK_NAME']}"
    if env.get("AWS_REGION"):
        where += f" --region {env['AWS_REGION']}"
    return f"python -m idem settle{where}", f"python -m idem refund{where}"


def reconcile_window(env: Mapping[str, str], session: Any, start: float, end: float, lag: float,
                     fetch: Fetch = _fetch_json, inventory: str | None = None,
                     listed: list[UploadSeen] | None = None) -> WindowReport:
    """Read the three sides for [start, end) and compare them (`listed`: the bucket's versions,
    listed once for every window of the run)."""
    dynamodb, s3 = session.client("dynamodb"), session.client("s3")
    table = env["LEDGER_TABLE"]
    lines = ledger_lines(dynamodb, table, start, end + lag)
    # each line booked in the window: its customer and currency, and its account's customer mapping
    terms, mapped = line_terms(dynamodb, table, [line for line in lines if start <= line.at < end])
    lines = [replace(line, customer=terms[line.key][0], currency=terms[line.key][1]) if line.key in terms else line
             for line in lines]
    if env.get("PROVIDER_TABLE"):
        # the demo's stand-in: its own small table, read whole up to the window's reach; its
        # customers are named by the account when no mapping links one
        charges = standin_charges(dynamodb, env["PROVIDER_TABLE"], 0, end + lag)

        def customer_of(account: str) -> str | None:
            return mapped.get(account) or account
    else:
        secret = session.client("ssm").get_parameter(Name=env["STRIPE_SECRET_PARAMETER"],
                                                     WithDecryption=True)["Parameter"]["Value"]
        stack, api = env.get("STACK_NAME", ""), env.get("STRIPE_API_BASE") or STRIPE_API
        charges = stripe_charges(secret, stack, start, end, fetch, api)
        # every charge ever made for each order charged in the window, and for each order booked
        # in it for a charge made before it (a retry's commit, `idem settle` days later), however
        # long before or after: by the orders' keys
        known = {charge.charge_id for charge in charges}
        late = [line for line in lines if start <= line.at < end and line.charge_id and line.charge_id not in known]
        charges += order_charges(secret, stack, charges + late, fetch, api)
        # a line's charge that carries no such key (made by other code): by its id
        known = {charge.charge_id for charge in charges}
        for line in late:
            if line.charge_id not in known:
                older = retrieve_charge(secret, line.charge_id, fetch, api)
                if older is not None and older.status in CHARGED:
                    charges.append(older)
                    known.add(older.charge_id)

        def customer_of(account: str) -> str | None:
            return mapped.get(account)
    uploads: list[tuple[UploadSeen, str]] = []
    asked: dict[str, tuple[int, str]] = {}
    if env.get("UPLOAD_BUCKET"):
        identity = env.get("ORDER_IDENTITY") or "order-id"
        if inventory:
            where, _, manifest = inventory.partition("/")
            seen = inventory_uploads(s3, where, manifest, start, end)
        elif listed is not None:
            seen = [u for u in listed if start <= u.at < end]
        else:
            seen = listed_uploads(s3, env["UPLOAD_BUCKET"], start, end, limit=MAX_LISTED_VERSIONS)
        read = [(u, order_terms(s3, u, identity)) for u in seen]
        uploads = [(u, key) for u, (key, _) in read]
        asked = {u.uri: terms for u, (_, terms) in read if terms is not None}
    settle, refund = _commands(env)
    report = compare(lines, charges, start, end, uploads,
                     status_of=lambda key: record_status(dynamodb, table, key), settle=settle, refund=refund,
                     customer_of=customer_of, asked=asked)
    if not env.get("PROVIDER_TABLE"):  # records left pending past Stripe's retries, each against its PaymentIntent
        stale = pending_before(dynamodb, table, end - STALE_PENDING_SECONDS)
        with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:
            intents = dict(zip([r.charge_id for r in stale[:MAX_STALE_CHECKS]], pool.map(
                lambda pi: retrieve_charge(secret, pi, fetch, api), [r.charge_id for r in stale[:MAX_STALE_CHECKS]])))
        report.findings += stale_findings(stale, intents.get, end, settle)
    if not env.get("PROVIDER_TABLE"):  # the refunds Stripe made in the window that the ledger does not book
        try:
            refunds = window_refunds(secret, start, end, fetch, api)
        except urllib.error.HTTPError as error:
            if error.code != 403:
                raise
            report.findings.append(unreadable(error))
            return report
        report.findings += refund_findings(
            refunds, lambda pis: booked_refunds(dynamodb, table, pis), lambda pi: refunded_of(secret, pi, fetch, api),
            lambda pi: intent_of(secret, pi, fetch, api), stack, refund)
    return report


def run(env: Mapping[str, str], session: Any, now: float, say: Callable[[str], None] = print,
        fetch: Fetch = _fetch_json, max_windows: int = MAX_WINDOWS_PER_RUN,
        out_of_time: Callable[[], bool] = lambda: False) -> WindowReport:
    """One run: every closed window from the stored cursor on (at most `max_windows`, and none
    begun once `out_of_time()`), each read, compared, written to REPORT_BUCKET, its metrics printed,
    and the cursor moved past it. Returns the last window's report (the one just closed when the
    job is up to date); the next run carries on where this one stopped."""
    missing = [n for n in ("LEDGER_TABLE", "REPORT_BUCKET") if not env.get(n)]
    if not (env.get("PROVIDER_TABLE") or env.get("STRIPE_SECRET_PARAMETER")):
        missing.append("PROVIDER_TABLE or STRIPE_SECRET_PARAMETER")
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not set: template.yaml sets them on ReconcileFunction")
    lag = lag_of(env)
    minutes = int(env.get("WINDOW_MINUTES") or 60)
    last_start, last_end = window(now, minutes, lag)
    dynamodb, s3 = session.client("dynamodb"), session.client("s3")
    cursor = read_cursor(dynamodb, env["LEDGER_TABLE"])
    start = last_start if cursor is None else cursor
    from_inventory = bool(env.get("UPLOAD_INVENTORY")) and reads_inventory(dynamodb, env["LEDGER_TABLE"])
    listed: list[UploadSeen] | None = None
    if env.get("UPLOAD_BUCKET") and not from_inventory and start + minutes * 60 <= last_end:
        # one listing for every window of this run (the bucket is listed whole either way)
        try:
            listed = listed_uploads(s3, env["UPLOAD_BUCKET"], start, start + max_windows * minutes * 60,
                                    limit=MAX_LISTED_VERSIONS)
        except TooManyVersions:
            if not env.get("UPLOAD_INVENTORY"):
                raise
            mark_inventory(dynamodb, env["LEDGER_TABLE"])  # the bucket only grows: never list it again
            from_inventory = True
    if from_inventory:
        inventory, covered = _newest_inventory(s3, env)
        last_end = min(last_end, (int(covered) // (minutes * 60)) * minutes * 60)
        if start + minutes * 60 <= last_end:  # read once for every window of this run, as the listing is
            where, _, manifest = inventory.partition("/")
            listed = inventory_uploads(s3, where, manifest, start, start + max_windows * minutes * 60)
    report: WindowReport | None = None
    for n in range(max_windows):
        end = start + minutes * 60
        if end > last_end or (n and out_of_time()):
            break
        report = reconcile_window(env, session, start, end, lag, fetch, listed=listed)
        s3.put_object(Bucket=env["REPORT_BUCKET"], Key=report.key(),
                      Body=json.dumps(report.to_dict(), indent=1).encode(), ContentType="application/json")
        say(emf(report, env.get("AWS_LAMBDA_FUNCTION_NAME", "reconcile"), now))
        if not advance_cursor(dynamodb, env["LEDGER_TABLE"], cursor, end):
            break  # another run moved the cursor: it carries on from there
        cursor, start = end, end
    if report is None:  # nothing new closed since the last run: its window, read again
        report = WindowReport(start - minutes * 60, start)
    return report


def _newest_inventory(s3: Any, env: Mapping[str, str]) -> tuple[str, float]:
    """UPLOAD_INVENTORY (bucket/prefix): the newest manifest under it, as `bucket/key`, and the
    time its scan began (a window is judged only once a report made after it exists)."""
    where, _, prefix = env["UPLOAD_INVENTORY"].partition("/")
    newest = newest_manifest(s3, where, prefix)
    if newest is None:
        raise RuntimeError(f"the upload bucket is past {MAX_LISTED_VERSIONS:,} versions and there is no S3 "
                           f"Inventory manifest under s3://{env['UPLOAD_INVENTORY']} yet (template.yaml configures a daily "
                           "one on the prod upload bucket); the cursor waits")
    return f"{where}/{newest[0]}", newest[1]


def rerun(env: Mapping[str, str], session: Any, window_start: str, say: Callable[[str], None] = print,
          fetch: Fetch = _fetch_json) -> WindowReport:
    """One past window again, by a person (`{"window_start": "2026-11-06T10:00:00Z"}` as the
    invocation's event): its report is written anew, the cursor is left where it is."""
    try:
        start = float(calendar.timegm(time.strptime(window_start, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        raise ValueError(f"window_start {window_start!r}: give the window's start as 2026-11-06T10:00:00Z") from None
    length = int(env.get("WINDOW_MINUTES") or 60) * 60
    if start % length:
        raise ValueError(f"window_start {window_start}: windows start on whole multiples of {length // 60} minutes")
    inventory = None
    if env.get("UPLOAD_INVENTORY") and reads_inventory(session.client("dynamodb"), env["LEDGER_TABLE"]):
        inventory = _newest_inventory(session.client("s3"), env)[0]
    report = reconcile_window(env, session, start, start + length, lag_of(env), fetch, inventory)
    session.client("s3").put_object(Bucket=env["REPORT_BUCKET"], Key=report.key(),
                                    Body=json.dumps(report.to_dict(), indent=1).encode(),
                                    ContentType="application/json")
    say(emf(report, env.get("AWS_LAMBDA_FUNCTION_NAME", "reconcile"), time.time()))
    return report


def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
    """EventBridge Scheduler's target (template.yaml: ReconcileFunction); invoked by a person with
    `{"window_start": "YYYY-MM-DDTHH:MM:SSZ"}`, that one window again."""
    if isinstance(event, dict) and event.get("window_start"):
        report = rerun(os.environ, boto3.session.Session(), str(event["window_start"]))
    else:  # a window takes about three minutes at 100,000 orders a day: begin none without them
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        report = run(os.environ, boto3.session.Session(), time.time(),
                     out_of_time=lambda: remaining is not None and int(remaining()) < RESERVE_MILLIS)
    return {"window": report.to_dict()["window"], "differences": report.differences,
            "report": report.key()}
