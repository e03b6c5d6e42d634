"""botocore's own retries at the check's boundaries (idem.sim.sdk_retries): a lost answer is resent as
the handler's client is configured and the handler gets the resend's answer; only when every attempt's
answer is lost does it see the ReadTimeoutError. Faults come in runs (idem.explore.families.runs)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from idem.explore.check import check_handler
from idem.explore.families.runs import EVERY_CALL
from idem.sim.sdk_retries import EVERY

HANDLERS = Path(__file__).parent / "handlers"
FAST = dict(retries=(0,), workers=1)
#: Where the merged money contract breaks these small handlers, whatever their SDK resends do: each
#: guards a redrive past Stripe's 24-hour key window with Stripe's key alone (test_check_handlers).
KEY_WINDOW = {"late": "double_charge", "again": "double_charge"}


def past_the_key_window_only(report, *, but=()):
    """Every break is in a family where only Stripe's key window moved it (KEY_WINDOW), or in `but`."""
    return all(KEY_WINDOW.get(r.schedule.dimension) == r.verdict or r.schedule.dimension in but
               for r in report.broken)

#: Books each charge with one unconditional PutItem through a client configured as CONFIG says.
BOOKS_WITH_CONFIG = textwrap.dedent('''
    import os
    import boto3
    from botocore.config import Config

    CONFIG = {config}

    def make_provider():
        raise RuntimeError("the check replaces this")

    def lambda_handler(event, context):
        dynamodb = boto3.client("dynamodb", config=CONFIG)
        key = event["Records"][0]["s3"]["object"]["key"]
        charge = make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                        idempotency_key="k#" + key)
        dynamodb.put_item(TableName=os.environ["LEDGER_TABLE"], Item={{"pk": {{"S": key}}, "charge_id": {{"S": charge.id}}}})
        return {{"ok": True}}
''')


def lost_everywhere(report, call="dynamodb:PutItem"):
    """The single-delivery schedule whose run loses the answer of every SDK attempt at `call`."""
    (found,) = [r for r in report.results if r.schedule.dimension == "runs" and r.schedule.delivery == "single"
                and str(r.schedule.fault.at) == f"after {call}" and r.schedule.fault.run == EVERY]
    return found


@pytest.mark.parametrize("config, attempts", [
    ('Config(retries={"mode": "standard", "total_max_attempts": 2})', 2),
    ('Config(retries={"mode": "legacy", "total_max_attempts": 5})', 5),
    ('Config(retries={"mode": "adaptive", "max_attempts": 2})', 3),  # botocore: max_attempts counts retries
])
def test_the_sdk_resends_as_the_handlers_client_is_configured_and_then_gives_up(tmp_path, config, attempts):
    handler = tmp_path / "books.py"
    handler.write_text(BOOKS_WITH_CONFIG.format(config=config))
    # keyed by the object's name: no second upload of one name (versioning=()), where it would break
    report = check_handler(f"{handler}:lambda_handler", versioning=(), **FAST)
    # an unconditional put resent lands the same item: no fault or run of faults breaks it; it breaks
    # only where a redrive comes past Stripe's key window, which the SDK's resends do not touch
    assert report.broken and past_the_key_window_only(report), report.explain()
    assert not [r for r in report.broken if r.schedule.dimension in ("faults", "runs")], report.explain()
    result = lost_everywhere(report)
    (attempt,) = result.attempts
    lost = [c for c in attempt.crossings if "a lost answer" in c.failed]
    assert len(lost) == attempts  # one per attempt the client's retry config allows
    assert attempt.outcome == "error" and attempt.error.startswith("ReadTimeoutError")
    assert result.verdict == "needs_attention"  # charged, not booked, the event in the failure queue


def test_a_lost_claim_answer_comes_back_as_the_resends_conditional_check_failure():
    report = check_handler(f"{HANDLERS / 'claim_says_taken.py'}:lambda_handler", **FAST)
    (lost,) = [r for r in report.results if r.schedule.fault and r.schedule.dimension == "faults"
               and r.schedule.delivery == "single" and str(r.schedule.fault.at) == "after dynamodb:PutItem"
               and r.schedule.fault.how.value == "exception"]
    (attempt,) = lost.attempts
    assert attempt.outcome == "ok" and lost.verdict == "silent_loss", lost.findings  # it read its own claim as taken
    assert [str(c.boundary) for c in attempt.crossings if c.failed] == ["after dynamodb:PutItem"]
    # a run that loses every answer: the handler sees the timeout, fails, and the event is kept
    assert lost_everywhere(report).verdict == "failed_visibly"


def test_a_helper_that_retries_until_its_deadline_is_seen_giving_up_there():
    # "every time the handler calls it again" lasts as long as the invocation: its sleeps move the clock
    report = check_handler(f"{HANDLERS / 'deadline_retry_books.py'}:lambda_handler", **FAST)
    broken = {(r.schedule.fault.run, r.verdict) for r in report.broken if r.schedule.dimension == "runs"}
    assert broken == {(EVERY_CALL, "silent_mismatch")}, report.explain()


def test_a_run_of_three_throttles_is_what_breaks_a_helper_that_tries_three_times():
    report = check_handler(f"{HANDLERS / 'books_retry_helper.py'}:lambda_handler", **FAST)
    broken = {(r.schedule.fault.run, r.verdict) for r in report.broken if r.schedule.dimension == "runs"}
    assert broken == {(3, "silent_mismatch"), (EVERY_CALL, "silent_mismatch")}, report.explain()
    assert past_the_key_window_only(report, but=("runs", "second_fault")), report.explain()  # no single fault does
    # the second round's own: a run of two throttles at the helper's first two tries, and the second fault at its
    # third (a call the clean run never made): three in a row, as the run of three above
    assert {(r.schedule.fault.run, str(r.schedule.fault.also.at), r.verdict) for r in report.broken
            if r.schedule.dimension == "second_fault"} <= {(2, "before dynamodb:PutItem #3", "silent_mismatch")}
    (smallest,) = {tuple(r.findings) for r in report.broken if r.schedule.dimension == "runs"}
    assert smallest == ("a charge with no ledger line",)
    assert report.dimensions()["runs"] > 0
