"""Issue 41: the check's world as AWS and Stripe document it, for time and accounts. Each delay is
drawn from its documented range with its ends as schedules of their own (idem/explore/families/timings.py),
the clock starts two minutes before midnight, an order is sent again hours and days later and after
it went to the failure queue, and another account uploads an order with the same order id
(idem/explore/families/timed.py). Each handler here is written as teams write them, with the published fact
behind its verdict in its docstring (tests/handlers/)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from idem.explore.families import accounts, timed, timings
from idem.explore.check import check_handler
from idem.explore.families.build import DIMENSIONS, schedules_for
from idem.sim.faults import END, Boundary, Side
from idem.sim.runtime.delays import RETRY_DELAYS
from idem.sim.runtime import DEFAULT_MAX_EVENT_AGE

HANDLERS = Path(__file__).parent / "handlers"
SIX_HOURS = 6 * 3600.0  # Lambda's maximum event age, its default and its most


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def test_each_delay_has_its_documented_range_and_both_ends():
    assert DEFAULT_MAX_EVENT_AGE == SIX_HOURS
    # S3: at least once, "sometimes a minute or longer", then up to the maximum event age in Lambda's queue
    assert timings.copy_range("s3", SIX_HOURS) == (0.0, 60.0 + SIX_HOURS)
    assert timings.copy_delay(timings.LOW_ENDS, "s3", SIX_HOURS) == 0.0
    assert timings.copy_delay(timings.HIGH_ENDS, "s3", SIX_HOURS) == 60.0 + SIX_HOURS
    # EventBridge retries a target for up to 24 hours
    assert timings.copy_range("eventbridge", SIX_HOURS) == (0.0, 86_400.0 + SIX_HOURS)
    # Lambda: the documented one and two minutes at the low end, the event's maximum age at the high end
    low, high = (timings.retry_delay(t, SIX_HOURS) for t in (timings.LOW_ENDS, timings.HIGH_ENDS))
    assert (low(1, 0.0), low(2, 60.0)) == RETRY_DELAYS == (60.0, 120.0)
    assert high(1, 0.25) == SIX_HOURS - 0.25  # the retry comes as the event reaches its maximum age
    assert high(2, SIX_HOURS) == 120.0  # nothing left: the documented wait, and the event is dropped
    # a template's shorter maximum age shortens the range
    assert timings.retry_delay(timings.HIGH_ENDS, 3600.0)(1, 0.0) == 3600.0


def test_draws_are_seeded_inside_the_ranges_and_reach_both_minutes_and_hours():
    draws = [timings.draw(f"shape {n}") for n in range(200)]
    assert draws == [timings.draw(f"shape {n}") for n in range(200)]  # the same every run
    copies = [timings.copy_delay(d, "s3", SIX_HOURS) for d in draws]
    retries = [timings.retry_delay(d, SIX_HOURS)(1, 0.0) for d in draws]
    assert all(0.0 <= c <= 60.0 + SIX_HOURS for c in copies)
    assert all(60.0 <= r <= SIX_HOURS for r in retries)
    assert min(retries) < 120.0 and max(retries) > 3600.0  # a log scale: minutes and hours
    with pytest.raises(ValueError, match="fraction"):
        timings.Timing(1.5)


def test_the_check_clock_starts_two_minutes_before_a_new_day_week_month_and_year_utc():
    start = datetime.fromtimestamp(timings.CHECK_START, timezone.utc)
    assert start == datetime(2023, 12, 31, 23, 58, tzinfo=timezone.utc)
    assert timings.TO_MIDNIGHT == 120.0 < RETRY_DELAYS[0] + RETRY_DELAYS[1]  # the third attempt is tomorrow
    after = datetime.fromtimestamp(timings.CHECK_START + timings.TO_MIDNIGHT, timezone.utc)
    # every calendar key a team builds changes at that midnight: day, ISO week, both week counts, month, year
    for shape in ("%Y-%m-%d", "%G-W%V", "%Y-%U", "%Y-%W", "%Y-%m", "%Y"):
        assert start.strftime(shape) != after.strftime(shape), shape


def test_every_new_family_is_named_and_each_range_end_is_a_schedule_of_its_own():
    put, charge = Boundary("dynamodb:PutItem"), Boundary("provider:charge")
    crossed = [put, Boundary("dynamodb:PutItem", side=Side.AFTER), charge,
               Boundary("provider:charge", side=Side.AFTER), END]
    found = schedules_for(crossed, (0, 1, 2))
    families = {s.dimension for s in found}
    assert set(timed.DIMENSIONS) <= families and set(timed.DIMENSIONS) <= set(DIMENSIONS)
    late = [s for s in found if s.dimension == "late"]
    assert {s.timing for s in late if s.timing in (timings.LOW_ENDS, timings.HIGH_ENDS)} == {
        timings.LOW_ENDS, timings.HIGH_ENDS}
    named = {s.later.seconds for s in late if s.later.seconds}
    assert named == {121.0, 901.0, 86_401.0, 3 * 86_400.0}  # midnight, 15 min, Stripe's 24 h, 3 days
    ends = [s for s in found if s.dimension == "retry_ends"]
    assert {(s.fault.at, s.timing) for s in ends} == {(b, t) for b in crossed
                                                      for t in (timings.LOW_ENDS, timings.HIGH_ENDS)}
    zones = [s for s in found if s.dimension == "zones"]  # retry_ends' high ends, hours earlier
    assert {(s.fault.at, s.timing, s.later.seconds) for s in zones} == {
        (b, timings.HIGH_ENDS, hours * 3600.0) for b in crossed for hours in timed.ZONE_STARTS}
    again = [s for s in found if s.dimension == "again"]
    assert {(s.fault.times, s.later.how) for s in again} == {("1,2,3", "redrive"), ("1,2,3", "upload")}
    assert all(s.later.seconds > 86_400 for s in again if "Stripe" in s.later.why)
    # every other schedule has its delays drawn, the same for schedules of one shape
    drawn = [s for s in found if s.later is None]
    assert all(s.timing is not None and s.timing.name == "drawn" for s in drawn)
    assert len({s.timing for s in drawn}) > 3
    labels = [s.label() for s in found]
    assert len(labels) == len(set(labels)), "each schedule reads differently"


def test_pins_bug_a_dedup_record_of_15_minutes_charges_again_when_the_order_comes_back_a_day_later():
    report = check_handler(target("dedup_15_minutes"), retries=(0,), workers=1)
    broken = {r.schedule.dimension for r in report.broken}
    assert broken and broken <= {"late", "again"}, broken  # no fault, copy or overwrite at seconds shows it
    late = [r for r in report.broken if r.schedule.dimension == "late"]
    assert {r.schedule.later.seconds for r in late} == {86_401.0, 3 * 86_400.0}  # past Stripe's key window
    assert all(r.verdict == "double_charge" and any("2 charges for one order" in f for f in r.findings) for r in late)


def test_pins_bug_todays_date_in_the_key_charges_again_after_midnight():
    report = check_handler(target("date_key"), retries=(0,), workers=1)
    assert not report.holds
    midnight = [r for r in report.broken if r.schedule.later and r.schedule.later.why == "just past midnight"]
    assert midnight and midnight[0].verdict == "double_charge", report.explain()
    fifteen = [r for r in report.results if r.schedule.dimension == "late" and r.schedule.later.seconds == 901.0]
    assert fifteen and all(r.breaks for r in fifteen)  # 15 minutes past 23:58 is tomorrow too


def test_pins_bug_the_iso_week_in_the_key_charges_again_when_a_copy_comes_on_monday():
    report = check_handler(target("iso_week_key"), retries=(0,), workers=1)
    midnight = [r for r in report.broken if r.schedule.later and r.schedule.later.why == "just past midnight"]
    assert midnight and midnight[0].verdict == "double_charge", report.explain()


def test_pins_bug_a_claim_kept_36_hours_charges_again_when_the_failure_queue_is_redriven_days_later(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "again")
    report = check_handler(target("inprogress_ttl_36h"), retries=(0,), workers=1)
    broken = {(r.schedule.later.seconds, r.verdict) for r in report.broken}
    assert broken == {(timed.BEFORE_RETENTION_ENDS[0], "double_charge")}, report.explain()  # a day later: visible
    assert timed.BEFORE_RETENTION_ENDS[0] == 4 * 86_400 - 1  # SQS's default retention, its last second


def test_pins_bug_a_lease_on_time_monotonic_is_taken_over_by_an_environment_whose_clock_is_ahead(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    report = check_handler(target("monotonic_lease"), retries=(0,), workers=1)
    assert report.broken and {r.verdict for r in report.broken} == {"silent_mismatch"}, report.explain()
    assert all(r.schedule.delivery == "concurrent" for r in report.broken)  # a copy, in an environment of its own
    report = check_handler(target("correct_monotonic_deadline"), retries=(0,), workers=1)
    assert report.holds, report.explain()  # differences within one invocation are what monotonic is for


def test_pins_bug_a_lease_on_time_perf_counter_is_taken_over_as_one_on_time_monotonic(monkeypatch):
    """perf_counter is the same clock as monotonic (Python 3.13): each environment reads its own."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "faults")
    report = check_handler(target("perf_counter_lease"), retries=(0,), workers=1)
    assert report.broken and {r.verdict for r in report.broken} == {"silent_mismatch"}, report.explain()
    assert all(r.schedule.delivery == "concurrent" for r in report.broken)


def test_each_execution_environment_reads_its_own_monotonic_clock_which_never_goes_back(world):
    import time

    from idem.sim.runtime import LocalLambda
    from idem.sim.runtime.on_lambda import as_lambda

    runtime = LocalLambda(world, {}, handler=f"{target('keyed_books')}", seed=7)
    seen = {}
    for container in ("c1", "c2", "c1"):
        with as_lambda({}, world.clock, runtime.session, monotonic_offset=runtime._monotonic_offset(container)):
            seen.setdefault(container, []).append(time.monotonic())
            now = time.monotonic()  # the same clock however it is read (perf_counter is monotonic's since 3.13)
            assert time.perf_counter() == now and time.clock_gettime(time.CLOCK_MONOTONIC) == now
            assert time.perf_counter_ns() == time.clock_gettime_ns(time.CLOCK_BOOTTIME) == int(now * 1e9)
            assert time.clock_gettime(time.CLOCK_REALTIME) == time.time()  # the wall clock: virtual too
        world.clock.advance(60.0)
    assert seen["c1"][1] - seen["c1"][0] == 120.0  # its own clock, moving with the virtual one
    assert abs(seen["c2"][0] - seen["c1"][0]) > 1.0  # another environment: another reference point
    assert all(type(clock).__name__ == "builtin_function_or_method"  # put back afterwards
               for clock in (time.monotonic, time.perf_counter, time.perf_counter_ns, time.clock_gettime))


def test_pins_bug_a_key_of_the_order_id_alone_answers_another_accounts_order_as_a_duplicate():
    report = check_handler(target("order_id_only"), retries=(0,), workers=1)
    assert {r.schedule.dimension for r in report.broken} == {"accounts"}, report.explain()
    for r in report.broken:  # whichever account's order ran second is the one lost
        assert r.verdict == "silent_loss" and any("no charge for the order" in f for f in r.findings)
    after = [r for r in report.broken if r.schedule.later.how == "after"]
    assert after and "order 2: no charge for the order" in after[0].findings


@pytest.mark.parametrize("name", ["account_order", "linked_customer"])
def test_a_key_of_the_account_and_the_order_holds_in_every_family(name):
    report = check_handler(target(name), retries=(2,), workers=1)
    assert report.holds, report.explain()
    counts = report.dimensions()
    assert all(counts[family] for family in {**timed.DIMENSIONS, **timed.ZONES})


def test_the_check_links_a_customer_only_for_a_function_that_reads_the_mapping():
    assert accounts.reads_mapping(str(HANDLERS / "linked_customer.py"))
    assert not accounts.reads_mapping(str(HANDLERS / "keyed_books.py"))
    assert accounts.account_of("alice/2026/order.json") == "alice"
    assert accounts.other_account_key("check00007/order 1.json", 7) == "other00007/order 1.json"


def test_the_handler_to_copy_holds_in_the_time_and_account_families():
    report = check_handler("idem.core.handlers.keyed:lambda_handler", retries=(0,), workers=1)
    assert report.holds, report.explain()


@pytest.mark.parametrize("name", ["tokyo_month_key", "india_week_key"])
def test_a_key_with_a_date_east_of_utc_breaks_only_where_the_clock_starts_hours_earlier(monkeypatch, name):
    """From 23:58 UTC on Sunday 31 December it is already Monday 1 January east of UTC: no retry meets
    a local midnight, and a key with Tokyo's month (UTC+9) or India's ISO week (UTC+5:30) held. The
    family zones starts the clock 6, 12 and 18 hours earlier; Lambda's retry up to six hours later
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html) meets it."""
    from check_cli import cli

    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "retry_ends,zones")
    code, out, _ = cli(target(name), "--retries", "2", "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1
    broken = {r["schedule"] for r in report["results"] if r["verdict"] == "double_charge"}
    assert broken and all("the clock started" in label for label in broken)
