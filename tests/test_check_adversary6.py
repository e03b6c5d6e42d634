"""Issue 41, the adversary's sixth round: handlers written as teams write them (tests/handlers/), each with the
verdict a correct checker must give and the published fact behind it in its docstring. Wrong before, and fixed:

- `futures_timeout_recharge` (a charge on a thread pool with `future.result(timeout=8)`, charged again under a
  new key when the wait times out) was said to hold: a slow call moved the virtual clock, but the future was
  done in real time at once, so the wait never timed out. Waits on a future now time out on the virtual
  clock (idem.sim.runtime.on_lambda.waits_on_clock); `futures_timeout_same_key` (fails instead, and Lambda's
  retry charges under the same key) holds.
- `perf_counter_lease` (tests/test_check_timings.py): time.perf_counter was the host's, not each
  environment's, as time.monotonic is.
- the check's uploads kept the replaced object's S3 tags in an unversioned bucket (tests/test_check_aws.py).
"""
from __future__ import annotations

import concurrent.futures
import time

import pytest

from check_cli import cli, target


def check(monkeypatch, name: str, families: str) -> tuple[int, str, str]:
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(target(name), "--retries", "0", "--workers", "1")


def test_pins_bug_a_second_charge_under_a_new_key_after_a_wait_times_out_charges_twice(monkeypatch):
    code, out, err = check(monkeypatch, "futures_timeout_recharge", families="slow")
    assert code == 1 and "double_charge" in out, (out + err)[-3000:]
    assert "slow provider:charge" in out, out[:3000]


def test_a_wait_that_times_out_and_fails_the_invocation_holds(monkeypatch):
    code, out, err = check(monkeypatch, "futures_timeout_same_key", families="slow,faults")
    assert code == 0 and "holds: " in out, (out + err)[-3000:]


@pytest.fixture
def waits(world):
    """A handler's thread (current() is an invocation) inside waits_on_clock, and a pool."""
    from idem.sim import boundary
    from idem.sim.runtime.on_lambda import waits_on_clock

    token = boundary._CURRENT.set((("watch", "visit"),))  # what current() reads inside an invocation
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        with waits_on_clock(world.clock):
            yield world.clock, pool
    finally:
        boundary._CURRENT.reset(token)
        pool.shutdown()


def test_an_answer_later_than_the_wait_s_deadline_on_the_virtual_clock_times_out(waits):
    clock, pool = waits
    slow = pool.submit(lambda: clock.advance_to(clock.now() + 29.0) and "charged")  # a slow call, done at once
    with pytest.raises(concurrent.futures.TimeoutError):
        slow.result(timeout=8)
    assert slow.result() == "charged"  # the call itself went on: its answer is there
    quick = pool.submit(lambda: clock.advance_to(clock.now() + 5.0) and "charged")
    assert quick.result(timeout=8)  # within the deadline: answered


def test_the_waiter_s_own_time_counts_and_another_thread_s_does_not(waits):
    clock, pool = waits
    done = pool.submit(lambda: "fast")  # done at once, at the virtual time it was made
    clock.advance_to(clock.now() + 60.0)  # the waiter's own slow work after it
    assert done.result(timeout=1) == "fast"  # answered long before the wait began
    started = time.monotonic()
    slow = pool.submit(lambda: clock.advance_to(clock.now() + 20.0))
    with pytest.raises(concurrent.futures.TimeoutError):
        slow.exception(timeout=10)
    assert time.monotonic() - started < 5  # no real wait for it
