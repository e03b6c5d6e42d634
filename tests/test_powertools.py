"""The powertools handler: Powertools' idempotency utility around the same charge, run.

The matrix rows come from `python -m idem sim --handler powertools --all --json`, pinned
row by row. Rows that pin a gap of the library on purpose say so in their test id
(`pins_gap_`): a charge followed by an exception is charged again, because Powertools
deletes its record when the function raises.
"""
from __future__ import annotations

import contextlib
import datetime
import io
import importlib
import json

import pytest

from idem.core.clock import SystemClock, VirtualClock
from idem.cli import main
from idem.core.entry import ConfigError
from idem.explore import powertools as pt
from idem.sim import powertools_entry as pe
from idem.explore import scenarios as sc
from idem.sim.faults import Boundary, FaultPlan, Side

# (fault, times, delivery) -> (charges, ledger, attempts, dlq, record, dynamodb_calls, verdict)
# dynamodb_calls counts every DynamoDB call the function makes, at its boundary: Powertools'
# record calls and the ledger entry alike (it used to count the record calls only, one fewer
# per successful charge).
EXPECTED = {
    ("none", "-", "single"): (1, 1, 1, 0, "done", 3, "exactly_once"),
    ("none", "-", "duplicate"): (1, 1, 2, 0, "done", 4, "exactly_once"),
    ("none", "-", "concurrent"): (1, 1, 3, 0, "done", 5, "exactly_once"),
    ("at_charge", "once", "single"): (1, 1, 2, 0, "done", 5, "exactly_once"),
    ("at_charge", "once", "duplicate"): (1, 1, 3, 0, "done", 6, "exactly_once"),
    ("at_charge", "once", "concurrent"): (1, 1, 4, 0, "done", 7, "exactly_once"),
    ("at_charge", "always", "single"): (0, 0, 3, 1, "-", 6, "failed_visibly"),
    ("at_charge", "always", "duplicate"): (0, 0, 6, 2, "-", 12, "failed_visibly"),
    ("at_charge", "always", "concurrent"): (0, 0, 6, 2, "-", 11, "failed_visibly"),
    ("after_charge", "once", "single"): (2, 1, 2, 0, "done", 5, "double_charge"),
    ("after_charge", "once", "duplicate"): (2, 1, 3, 0, "done", 6, "double_charge"),
    ("after_charge", "once", "concurrent"): (2, 1, 4, 0, "done", 7, "double_charge"),
    ("after_charge", "always", "single"): (3, 0, 3, 1, "-", 6, "double_charge"),
    ("after_charge", "always", "duplicate"): (6, 0, 6, 2, "-", 12, "double_charge"),
    ("after_charge", "always", "concurrent"): (5, 0, 6, 2, "-", 11, "double_charge"),
    ("after_commit", "once", "single"): (1, 1, 2, 0, "done", 4, "exactly_once"),
    ("after_commit", "once", "duplicate"): (1, 1, 3, 0, "done", 5, "exactly_once"),
    ("after_commit", "once", "concurrent"): (1, 1, 4, 0, "done", 6, "exactly_once"),
    ("after_commit", "always", "single"): (1, 1, 3, 1, "done", 5, "exactly_once"),
    ("after_commit", "always", "duplicate"): (1, 1, 6, 2, "done", 8, "exactly_once"),
    ("after_commit", "always", "concurrent"): (1, 1, 6, 2, "done", 8, "exactly_once"),
}
FIELDS = ("charges", "ledger", "attempts", "dlq", "record", "dynamodb_calls", "verdict")


@pytest.fixture(scope="module")
def sim_rows():
    """Every powertools row, as the command line prints them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["sim", "--handler", "powertools", "--all", "--json"]) == 0
    return {(r["fault"], r["times"], r["delivery"]): r for r in json.loads(out.getvalue())}


def test_sim_all_gives_a_row_for_every_fault_time_and_delivery(sim_rows):
    assert set(sim_rows) == set(EXPECTED)
    assert all(r["handler"] == "powertools" for r in sim_rows.values())


@pytest.mark.parametrize("row", list(EXPECTED), ids=lambda row: (
    ("pins_gap_" if EXPECTED[row][-1] == "double_charge" else "") + "-".join(row)))
def test_sim_row_is_pinned(sim_rows, row):
    got = sim_rows[row]
    assert tuple(got[f] for f in FIELDS) == EXPECTED[row]


def _run(fault="none", times="-", delivery="single", **options):
    fix = options.pop("fix", "none")
    settings = {k: options.pop(k) for k in list(options) if k.isupper()}
    return pt.run(sc.Scenario("powertools", fault, times, delivery, **options), fix, **settings)


def test_pins_gap_record_deleted_when_the_function_raises_after_the_charge():
    # No retries: the single attempt charged, raised, and Powertools deleted its record.
    outcome = _run("after_charge", "once", retries=0)
    assert (outcome.charges, outcome.record, outcome.dlq) == (1, "-", 1)
    assert outcome.trace[0].dynamodb_calls == 2  # PutItem (INPROGRESS), then DeleteItem


def test_pins_gap_charge_then_exception_is_charged_again_on_retry():
    outcome = _run("after_charge", "once")
    assert [a.outcome for a in outcome.trace] == ["error", "ok"]
    assert (outcome.charges, outcome.verdict) == (2, "double_charge")


def test_crash_leaves_the_record_in_progress():
    outcome = _run("after_charge", "once", how="crash", retries=0)
    assert outcome.record == "in_progress"
    assert outcome.verdict == "needs_attention"


def test_crash_blocks_retries_until_the_in_progress_expiry_with_a_long_timeout():
    # The in-progress expiry is the invocation's deadline: 900 s after the crash, so the
    # retries at +60 s and +180 s find the record still INPROGRESS (on the virtual clock).
    outcome = _run("after_charge", "once", how="crash", timeout=900)
    assert [a.error.split(":")[0] for a in outcome.trace[1:]] == [
        "IdempotencyAlreadyInProgressError", "IdempotencyAlreadyInProgressError"]
    assert (outcome.charges, outcome.record, outcome.dlq) == (1, "in_progress", 1)


def test_pins_gap_crash_retry_after_the_in_progress_expiry_charges_again():
    # 30 s timeout: the retry at +60 s is past the in-progress expiry and takes the record over.
    outcome = _run("after_charge", "once", how="crash")
    assert [a.outcome for a in outcome.trace] == ["crash", "ok"]
    assert (outcome.charges, outcome.record) == (2, "done")


def test_concurrent_duplicate_gets_already_in_progress_then_replays_on_retry():
    outcome = _run(delivery="concurrent")
    copy = [a for a in outcome.trace if a.delivery == 2]
    assert copy[0].error.startswith("IdempotencyAlreadyInProgressError: Execution already in progress")
    assert copy[1].outcome == "ok" and copy[1].result["processed"][0]["status"] == "duplicate"
    assert outcome.charges == 1


def test_duplicate_costs_one_dynamodb_call_and_replays_the_stored_result():
    outcome = _run(delivery="duplicate")
    first, second = outcome.trace
    assert (first.dynamodb_calls, second.dynamodb_calls) == (3, 1)  # record put, entry, COMPLETED
    assert second.result["processed"][0] == {**first.result["processed"][0], "status": "duplicate"}


def test_local_cache_makes_a_warm_duplicate_free_but_not_a_cold_one():
    warm = _run(delivery="duplicate", POWERTOOLS_LOCAL_CACHE="1")
    cold = _run(delivery="duplicate", reuse_containers=False, POWERTOOLS_LOCAL_CACHE="1")
    assert warm.trace[1].dynamodb_calls == 0
    assert cold.trace[1].dynamodb_calls == 1


@pytest.mark.parametrize("how", ["exception", "crash"])
def test_provider_key_fix_charges_once_whatever_follows_the_charge(how):
    outcome = _run("after_charge", "once", how=how, fix="provider_key")
    assert (outcome.charges, outcome.verdict) == (1, "exactly_once")


def test_catch_fix_closes_an_error_after_the_charge_returned():
    # The ledger entry is the function's first UpdateItem (Powertools' COMPLETED is the second).
    entry_fails = FaultPlan(Boundary("dynamodb:UpdateItem", 1, Side.BEFORE), "once")
    caught = pt.run(sc.Scenario("powertools"), fix="catch", fault=entry_fails)
    raised = pt.run(sc.Scenario("powertools"), fault=entry_fails)
    assert (caught.charges, caught.attempts, caught.record) == (1, 1, "done")
    assert (raised.charges, raised.verdict) == (2, "double_charge")


def test_pins_gap_catch_fix_cannot_know_whether_a_lost_answer_moved_money():
    # The provider charged, but its answer never reached the function: nothing to catch on,
    # so Powertools deletes the record and the retry charges again. Only a provider key helps.
    outcome = _run("after_charge", "once", fix="catch")
    assert (outcome.charges, outcome.verdict) == (2, "double_charge")


def test_pins_gap_catch_fix_cannot_catch_a_crash():
    outcome = _run("after_charge", "once", how="crash", fix="catch")
    assert (outcome.charges, outcome.verdict) == (2, "double_charge")


def test_record_expiry_lets_a_late_duplicate_through_on_virtual_time():
    one_hour = pt.run_uploads([b"order"], redeliver_after=7200, RECORD_TTL_SECONDS="3600")
    one_day = pt.run_uploads([b"order"], redeliver_after=7200)
    assert (one_hour.charges, one_day.charges) == (2, 1)


def test_payload_validation_refuses_a_reused_key_with_other_content():
    settings = dict(POWERTOOLS_KEY="[bucket, key]")
    silent = pt.run_uploads([b"order v1", b"order v2"], **settings)
    loud = pt.run_uploads([b"order v1", b"order v2"], POWERTOOLS_VALIDATE="etag", **settings)
    assert (silent.charges, silent.dlq) == (1, 0)  # the second order was skipped, silently
    assert (loud.charges, loud.dlq) == (1, 1)
    assert loud.trace[-1].error.startswith("IdempotencyValidationError")


def test_missing_key_raises_by_default_and_is_let_through_unguarded_otherwise():
    settings = dict(versioned=False, redeliver_after=5.0, POWERTOOLS_KEY="version_id")
    raised = pt.run_uploads([b"order"], **settings)
    unguarded = pt.run_uploads([b"order"], POWERTOOLS_RAISE_ON_MISSING_KEY="0", **settings)
    assert (raised.charges, raised.trace[0].error.split(":")[0]) == (0, "IdempotencyKeyError")
    assert unguarded.charges == 2
    assert "No idempotency key value found" in unguarded.trace[0].logs[0]


def test_powertools_time_reads_the_virtual_clock_and_restores_the_wall_clock():
    modules = [importlib.import_module(name) for name in pe.TIME_MODULES]
    clock = VirtualClock()
    with pe.powertools_time(clock):
        assert all(m.dt.datetime.now().timestamp() == clock.now() for m in modules)
    assert all(m.dt is datetime for m in modules)
    with pe.powertools_time(SystemClock()):
        assert all(m.dt is datetime for m in modules)


def test_bad_fix_and_bad_flag_are_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="unknown fix 'retry'; choose from none, catch, provider_key, book_once"):
        _run(fix="retry")
    with pytest.raises(ValueError, match="runs the powertools handler"):
        pt.run(sc.Scenario("keyed"))
    with pytest.raises(ConfigError, match="POWERTOOLS_LOCAL_CACHE must be 1 or 0, got 'yes'"):
        _run(POWERTOOLS_LOCAL_CACHE="yes")  # the cold start fails, as Lambda's init would


def test_powertools_is_a_handler_name_of_the_matrix():
    assert "powertools" in sc.handler_names()
    assert sc.run(sc.Scenario("powertools")).verdict == "exactly_once"


# -- issue 21: the recommended key without versionId, and an error after the ledger write -------
def test_pins_gap_recommended_key_without_version_id_takes_a_second_order_for_a_duplicate():
    """Powertools' key is missing only when *every* selected value is None
    (persistence/base.py, is_missing_idempotency_key): [bucket, key, None] is a key."""
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

    assert BasePersistenceLayer.is_missing_idempotency_key(["b", "k", None]) is False
    assert BasePersistenceLayer.is_missing_idempotency_key([None, None]) is True
    two_orders = pt.run_uploads([b"v1", b"v2"], versioned=False)
    assert pe.KEY_JMESPATH == "[bucket, key, version_id]"
    assert (two_orders.charges, pt.summary(two_orders)["errors"]) == (1, "-")  # silent
    with_sequencer = pt.run_uploads([b"v1", b"v2"], versioned=False,
                                    POWERTOOLS_KEY="[bucket, key, version_id, sequencer]")
    assert with_sequencer.charges == 2


def _after_ledger(fix, how="exception", times="once"):
    scenario = sc.Scenario("powertools", pt.AFTER_LEDGER, times, how=how)
    return pt.run(scenario, fix=fix, fault=pt.fault_plan(scenario, fix))


@pytest.mark.parametrize("how", ["exception", "crash"])
def test_pins_gap_provider_key_books_twice_after_an_error_after_the_ledger_write(how):
    outcome = _after_ledger("provider_key", how)
    assert (outcome.charges, outcome.ledger, outcome.dlq, outcome.verdict) == (1, 2, 0, "silent_mismatch")


@pytest.mark.parametrize("how", ["exception", "crash"])
@pytest.mark.parametrize("point", ["after_charge", "after_ledger"])
def test_book_once_charges_and_books_once_wherever_the_error_comes(point, how):
    scenario = sc.Scenario("powertools", point, "once", how=how)
    outcome = pt.run(scenario, fix="book_once", fault=pt.fault_plan(scenario, "book_once"))
    assert (outcome.charges, outcome.ledger, outcome.verdict) == (1, 1, "exactly_once")


def test_book_once_poison_moves_money_once_and_lands_in_the_failure_queue():
    outcome = _after_ledger("book_once", times="always")
    assert (outcome.charges, outcome.ledger, outcome.dlq, outcome.verdict) == (1, 1, 1, "needs_attention")


def test_after_ledger_fails_at_each_fixs_ledger_write():
    """The fault lands just after the write that books the charge, not after Powertools' own."""
    for fix in pe.FIXES:
        first = _after_ledger(fix).trace[0]
        failed = [c.boundary for c in first.crossings if c.failed]
        assert failed == [pt.LEDGER_WRITE[fix]], fix


# -- the handler as a reader writes it -------------------------------------------------------
def test_readers_handler_charges_each_upload_once_without_versioning():
    outcome = pt.run_handler([b"v1", b"v2"], versioned=False, redeliver_after=5.0)
    assert (pt.summary(outcome)["deliveries"], outcome.charges, outcome.ledger) == (4, 2, 2)


@pytest.mark.parametrize("how", ["exception", "crash"])
def test_readers_handler_books_once_after_an_error_after_its_ledger_write(how):
    fault = FaultPlan(Boundary("dynamodb:PutItem", 1, Side.AFTER), "once", how)
    outcome = pt.run_handler([b"v1"], fault=fault)
    assert (outcome.charges, outcome.ledger, outcome.dlq, outcome.attempts) == (1, 1, 0, 2)


def test_readers_handler_key_fits_stripes_255_characters():
    from idem.lessons.scribes.key_stories import STRIPE_MAX_KEY_CHARS

    outcome = pt.run_handler([b"v1"])
    keys = [i["pk"] for i in outcome.items if "pk" in i and i["pk"].startswith("charge#")]
    assert keys and all(len(k) <= STRIPE_MAX_KEY_CHARS for k in keys)
