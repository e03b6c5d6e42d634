"""The family `second_fault`: a fault of the first round, then a call that only that fault led to, failing too
(or, with no fault, a call only the schedule's deliveries led to).

The first round fails one call per schedule, among the calls the clean run made (`build`). Some calls are
made only after a fault: the retry of an attempt that charged and stopped before booking asks Stripe whether
the order was charged (a list or a search of PaymentIntents, or the provider interface's `find_charges`); a
retry takes over the claim an earlier attempt left (a conditional UpdateItem); an attempt on its way to a
failure releases or parks its claim. A handler that takes a failed look-up for "not charged" charges again,
and one that takes a failed takeover for "another attempt has it" returns success on an unpaid order. Each
takes two faults in one schedule: the first, and the call's. So after the first round, each of its schedules
that reached a call the clean run never made (its result's `reached`) is run again with that call failing on
its first arrival: a read of Stripe's as Stripe's SDK fails it
(`idem.explore.sandbox.stripe_sdk.read_at_boundary`), an AWS call as botocore raises a throttle once its
attempts are spent (`idem.sim.sdk_retries.aws_error`), and, in another schedule, the AWS call's answer lost
after it did its work, which botocore sends again (`idem.sim.sdk_retries.lose_answers`): the handler gets
the resend's own answer, so a conditional takeover its first attempt made now fails its condition. The
property, from the domain: an error is not an answer; a handler that could not make the call, or cannot tell
its own write from another's, has learnt nothing from it.

A schedule with no fault reaches calls the clean run never made as well: keyed parks an order whose file a
second order at its name replaced before it was read (`overwrite`), or another account's order whose file
names the first account's customer (`accounts`), with a write the clean run never made. Each such schedule
runs again with that call failing on its first arrival, the same two ways; its plan has no first fault
(`FaultPlan(also=...)`), as a plan whose outage is over has none. A handler that counts a failed park as
parked and returns success loses the order with nothing in the failure queue.

A call is also new where the clean run crossed its boundary with another request: a boundary is named by its
call and number, and a takeover can be the invocation's second PutItem as the clean run's commit is. Each AWS
call has a role (idem.sim.platform.call_roles: its table, expressions, attribute names and status words, or
the resource it names); a call whose role no request of the clean run's to that call had is failed too, its
plan pinned to that role (`FaultPlan.role`), so the clean run's own request at that boundary goes through.

In the family `again`, the first fault is an outage that is over before the redrive; the second fault
outlives it (`FaultPlan.over`), so a call the redrive makes for the first time (keyed's look-up at the
provider, past its key window) fails too.

Not modelled: a crash at such a call, its later arrivals, every attempt's answer lost, a third fault; two
requests whose values alone tell them apart, each value data (a status word with a digit in it).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Sequence

from ...sim.faults import CHARGE_CALL, END_CALL, STRIPE_READS, FaultPlan, How, Side

#: the calls that are no AWS call: the charge (the provider's, or Stripe's SDK's) and Stripe's reads
NOT_AWS = (CHARGE_CALL.partition(":")[0] + ":", STRIPE_READS)
FAMILY = "second_fault"
DESCRIPTION = ("a fault of the other families, then a call that only the fault led to (a retry's look-up at Stripe, "
               "its takeover of a claim, a release on the way to a failure) failing too, on its first arrival: "
               "throttled, or its answer lost and the call sent again; with no fault, a call only the schedule's "
               "deliveries led to (the park of a second order at one name) failing the same way")


def new_calls(result: Any, known: set[Any], roles: frozenset[tuple[Any, str]] = frozenset()) -> list[tuple[Any, Any]]:
    """The calls `result`'s run made that the clean run never made, each as (boundary, role): a boundary not
    among the clean run's (`known`; role None: whatever is asked there), or one of them where the request
    asked what no request of the clean run's to that call asked (its role, idem.sim.platform.call_roles;
    `roles` are the clean run's: a batch's second order's claim, made at another number, is the clean run's).
    Before each (a read of Stripe's, an AWS call), and after each AWS call (its answer lost; botocore resends
    it). The handler's return is no call; the side after a charge is the clean run's own."""
    def a_call(b: Any) -> bool:
        return b.call != END_CALL and (b.side is Side.BEFORE or not b.call.startswith(NOT_AWS))
    found: list[tuple[Any, Any]] = [(b, None) for b in (result.reached or {}) if b not in known and a_call(b)]
    asked = {(b.call, b.side, role) for b, role in roles}
    return found + sorted((b, role) for b, role in (getattr(result, "roles", None) or ())
                          if role and b in known and (b.call, b.side, role) not in asked and a_call(b))


def schedules(results: Iterable[Any], crossed: Sequence[Any],
              roles: frozenset[tuple[Any, str]] = frozenset()) -> list[Any]:
    """First-round schedules again, with a call only their fault (or, with none, their deliveries) led to failing
    too: for each such call, first fault (its boundary and how it fails, or none), retry setting and family,
    the smallest schedule that reached the call (fewest copies, then failing arrivals: `Schedule.size`), in the
    first round's order. The other ways there (each place a copy can start, the first fault on more arrivals or
    in a longer run) are not tried with a second fault: each is a third thing going wrong. `roles`: the clean
    run's (`new_calls`)."""
    known, found = set(crossed), {}
    for result in results:
        schedule = result.schedule
        plan = schedule.fault or FaultPlan()  # no fault: its family's deliveries led it there (module docstring)
        for call in new_calls(result, known, roles):
            way = (call, plan.at, plan.how, plan.outcome, schedule.retries, schedule.dimension)
            if way not in found or schedule.size < found[way].size:
                found[way] = schedule
    return [replace(schedule, fault=replace(schedule.fault or FaultPlan(),
                                            also=FaultPlan(way[0][0], "1", How.EXCEPTION, role=way[0][1])))
            for way, schedule in found.items()]
