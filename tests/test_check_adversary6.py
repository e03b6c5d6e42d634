"""Issue 41, the adversary's sixth round: handlers written as teams write them (tests/handlers/), each with the
verdict a correct checker must give and the published fact behind it in its docstring. Wrong before, and fixed:

- `futures_timeout_recharge` (a charge on a thread pool with `future.result(timeout=8)`, charged again under a
  new key when the wait times out) was said to hold: a slow call moved the virtual clock, but the future was
  done in real time at once, so the wait never timed out. Waits on a future now time out on the virtual
  clock (idem.sim.runtime.on_lambda.waits_on_clock); `futures_timeout_same_key` (fails instead, and Lambda's
  retry charges under the same key) holds. The same with `concurrent.futures.wait` and `as_completed`
  (`futures_wait_recharge`, `futures_as_completed_recharge`: said to hold, found the next session).
  So is a timed `Thread.join` read with `is_alive()` (`thread_join_recharge` breaks, `thread_join_same_key`
  holds).
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


@pytest.mark.parametrize("name", ["futures_wait_recharge", "futures_as_completed_recharge"])
def test_pins_bug_a_charge_given_up_by_wait_or_as_completed_and_sent_again_under_a_new_key_charges_twice(
        monkeypatch, name):
    # both were said to hold: their waits, bound at the handler's import, never timed out on the virtual clock
    code, out, err = check(monkeypatch, name, families="slow")
    assert code == 1 and "double_charge" in out and "slow provider:charge" in out, (out + err)[-3000:]


def test_a_charge_wait_gives_up_on_that_fails_the_invocation_holds(monkeypatch):
    code, out, err = check(monkeypatch, "futures_wait_same_key", families="slow,faults")
    assert code == 0 and "holds: " in out, (out + err)[-3000:]


def test_pins_bug_a_charge_thread_given_up_by_a_timed_join_and_charged_again_charges_twice(monkeypatch):
    # said to hold: the thread's slow charge moved the virtual clock, but it ended in real time at once,
    # so is_alive() after join(timeout=8) was False and the handler took its answer
    code, out, err = check(monkeypatch, "thread_join_recharge", families="slow,faults")
    assert code == 1 and "double_charge" in out and "slow provider:charge" in out, (out + err)[-3000:]


def test_a_charge_thread_still_running_after_a_timed_join_that_fails_the_invocation_holds(monkeypatch):
    code, out, err = check(monkeypatch, "thread_join_same_key", families="slow,faults")
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


def test_wait_counts_a_future_done_after_the_deadline_as_not_done(waits):
    clock, pool = waits
    from concurrent.futures import wait  # as a handler binds it: the name read while waits_on_clock is in force

    quick = pool.submit(lambda: clock.advance_to(clock.now() + 5.0) and "charged")
    quick.result()  # the pool's one thread: the slow call starts after it, 5 s in
    slow = pool.submit(lambda: clock.advance_to(clock.now() + 29.0) and "charged")
    done, not_done = wait([slow, quick], timeout=8)
    assert (done, not_done) == ({quick}, {slow})  # quick came 5 s in, slow 34 s in
    done, not_done = concurrent.futures.wait([slow, quick], timeout=60)
    assert (done, not_done) == ({slow, quick}, set())


def test_wait_for_the_first_ends_at_the_virtual_time_the_first_came(waits):
    clock, pool = waits
    later = pool.submit(lambda: clock.advance_to(clock.now() + 6.0))
    sooner = pool.submit(lambda: clock.advance_to(clock.now() + 5.0))  # made after, on the clock 6 s on: done at 11
    first = concurrent.futures.wait([later, sooner], timeout=30, return_when=concurrent.futures.FIRST_COMPLETED)
    assert first.done == {later} and first.not_done == {sooner}


def test_as_completed_gives_the_futures_done_by_the_deadline_then_times_out(waits):
    clock, pool = waits
    quick = pool.submit(lambda: "quick")
    quick.result()
    slow = pool.submit(lambda: clock.advance_to(clock.now() + 29.0) and "slow")
    arrived = []
    with pytest.raises(concurrent.futures.TimeoutError, match="1 \\(of 2\\) futures unfinished"):
        for future in concurrent.futures.as_completed([slow, quick], timeout=8):
            arrived.append(future.result())
    assert arrived == ["quick"]
    assert [f.result() for f in concurrent.futures.as_completed([slow, quick], timeout=60)] == ["quick", "slow"]


def test_waits_outside_the_check_are_python_s_own_again():
    from concurrent.futures import _base

    from idem.sim.runtime import on_lambda

    assert (concurrent.futures.wait, concurrent.futures.as_completed) == on_lambda._OWN_WAITS
    assert (_base.wait, _base.as_completed) == on_lambda._OWN_WAITS


def test_a_thread_whose_slow_call_ran_past_a_timed_join_is_alive_until_its_starter_s_time_gets_there(world):
    import threading

    from idem.sim import boundary
    from idem.sim.runtime import on_lambda
    from idem.sim.runtime.on_lambda import waits_on_clock
    from idem.sim.sessions import inherit_invocations

    clock = world.clock
    token = boundary._CURRENT.set((("watch", "visit"),))
    try:
        with inherit_invocations(), waits_on_clock(clock):
            slow = threading.Thread(target=lambda: clock.advance_to(clock.now() + 29.0))
            slow.start()
            slow.join(timeout=8)
            assert slow.is_alive()  # on Lambda it is: its call answers 29 s in, the join gave up at 8
            clock.advance_to(clock.now() + 30.0)  # the starter's own wait (a sleep) past the thread's end
            assert not slow.is_alive()
            again = threading.Thread(target=lambda: clock.advance_to(clock.now() + 29.0))
            again.start()
            again.join(timeout=8)
            assert again.is_alive()
            again.join()  # waited to its end
            assert not again.is_alive()
            quick = threading.Thread(target=lambda: clock.advance_to(clock.now() + 5.0))
            quick.start()
            quick.join(timeout=8)
            assert not quick.is_alive()  # done within the deadline
        assert (threading.Thread.join, threading.Thread.is_alive) == on_lambda._OWN_THREADS  # Python's own again
    finally:
        boundary._CURRENT.reset(token)


# -- Event.wait and Queue.get with a timeout (idem.sim.runtime.thread_waits) --------------------------------------

@pytest.mark.parametrize("name", ["event_wait_recharge", "queue_get_recharge"])
def test_pins_bug_a_charge_given_up_by_event_wait_or_queue_get_and_sent_again_under_a_new_key_charges_twice(
        monkeypatch, name):
    # both were said to hold in the slow family: the slow charge set its event (or put its answer) at once in
    # real time, and the wait took it as in time
    code, out, err = check(monkeypatch, name, families="slow")
    assert code == 1 and "double_charge" in out and "slow provider:charge" in out, (out + err)[-3000:]
    assert "breaks in 4 of 20 schedules" in out, out[:3000]  # each slow charge, as asyncio.wait_for finds them


@pytest.mark.parametrize("name", ["event_wait_same_key", "queue_get_same_key"])
def test_a_charge_event_wait_or_queue_get_gives_up_on_that_fails_the_invocation_holds(monkeypatch, name):
    code, out, err = check(monkeypatch, name, families="slow,names")
    assert code == 0 and "holds: " in out, (out + err)[-3000:]


@pytest.fixture
def own_clocks(world):
    """An invocation's own thread (a Visit that started now, on this thread), with the threads and pool work
    it starts running in its context, inside waits_on_clock; and a pool."""
    import threading

    from idem.sim import boundary
    from idem.sim.runtime.on_lambda import waits_on_clock
    from idem.sim.sessions import inherit_invocations

    visit = boundary.Visit(1, 1, "work", began=world.clock.now(), thread=threading.current_thread())
    token = boundary._CURRENT.set((("watch", visit),))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        with inherit_invocations(), waits_on_clock(world.clock):
            yield world.clock, pool
    finally:
        boundary._CURRENT.reset(token)
        pool.shutdown()


def test_an_event_set_after_the_wait_s_deadline_on_the_setter_s_own_clock_is_not_seen(own_clocks):
    import threading

    clock, pool = own_clocks
    slow, quick = threading.Event(), threading.Event()
    pool.submit(lambda: (clock.advance_to(clock.now() + 29.0), slow.set())).result()  # set 29 s in, at once
    started = clock.now()
    assert slow.wait(8) is False  # its deadline was 8 s in
    assert slow.is_set() and slow.wait(60) is True  # the flag is set: a later, longer wait sees it
    assert clock.now() == started  # the clock was past the deadline already: no sleep
    pool.submit(lambda: (clock.advance_to(clock.now() + 5.0), quick.set())).result()
    assert quick.wait(8) is True  # 5 s after it was asked for: in time


def test_a_queue_item_put_after_the_get_s_deadline_stays_for_a_later_get(own_clocks):
    import queue

    clock, pool = own_clocks
    answers: queue.Queue = queue.Queue()
    pool.submit(lambda: (clock.advance_to(clock.now() + 29.0), answers.put("charged"))).result()
    with pytest.raises(queue.Empty):
        answers.get(timeout=8)
    assert answers.get(timeout=60) == "charged"
    pool.submit(lambda: (clock.advance_to(clock.now() + 5.0), answers.put("quick"))).result()
    assert answers.get(timeout=8) == "quick"
    assert answers.empty()


def test_a_thread_s_own_clock_starts_at_its_starter_s_and_another_thread_s_slow_call_does_not_move_it(own_clocks):
    import threading

    clock, _ = own_clocks
    answer = threading.Event()
    mine = threading.Thread(target=lambda: (clock.advance_to(clock.now() + 3.0), answer.set()))
    other = threading.Thread(target=lambda: clock.advance_to(clock.now() + 100.0))  # someone else's slow call
    other.start()
    mine.start()
    mine.join()
    other.join(timeout=1)
    assert clock.now() >= 103.0 + own_clocks_began(clock)  # both slow calls moved the one virtual clock
    # but the answer came 3 s into this thread's own time, well within its 8 s
    assert answer.wait(8) is True


def own_clocks_began(clock) -> float:
    from idem.sim.boundary import current

    return current()[1].began


def test_event_and_queue_waits_outside_the_check_are_python_s_own_again():
    import queue
    import threading

    from idem.sim.runtime import thread_waits

    assert (threading.Event.set, threading.Event.clear, threading.Event.wait) == thread_waits._OWN_EVENT
    assert (queue.Queue._put, queue.Queue._get, queue.Queue.get) == thread_waits._OWN_QUEUE
