"""How a run fails: the boundaries' names (a call, its number, its side) and the fault plan.

A boundary is named by the call, which of its kind it is within one invocation, and the side:
`before provider:charge`, `after dynamodb:UpdateItem #2`; `end` is crossed when the handler
returns. A `FaultPlan` says at which boundary, on which arrivals, and how a run fails there
(an exception, a crash, or the provider's own answer). `idem.sim.boundary` applies it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from ..core.provider import ProviderOutcome


class Side(str, Enum):
    BEFORE = "before"  # the call has not been sent: nothing happened
    AFTER = "after"  # the call did its work; a fault here loses its answer

    def __str__(self) -> str:
        return self.value


class How(str, Enum):
    EXCEPTION = "exception"  # an error the handler's except clauses can see
    CRASH = "crash"  # the process dies: no except or finally of the handler runs

    def __str__(self) -> str:
        return self.value


#: The provider call every charging handler makes.
CHARGE_CALL = "provider:charge"
#: The provider interface's look-up of an order's charges (`Provider.find_charges`): a read, with a
#: boundary before it only (idem.sim.boundary.WatchedProvider)
FIND_CALL = "provider:find_charges"
#: Where the name of every call to the provider interface begins
PROVIDER_CALLS = "provider:"
#: The pseudo-call crossed when the handler returns.
END_CALL = "end"
#: Where the name of a read of Stripe's begins: a GET a handler sends with Stripe's SDK itself crosses a
#: boundary of its own (`stripe:ListPaymentIntents`: idem.explore.sandbox.stripe_sdk.read_call)
STRIPE_READS = "stripe:"


@dataclass(frozen=True, order=True)
class Boundary:
    """One place in an invocation: before or after the `nth` call named `call`."""

    call: str
    nth: int = 1
    side: Side = Side.BEFORE

    def __str__(self) -> str:
        if self.call == END_CALL:
            return "after the handler returned"
        return f"{self.side} {self.call}" + (f" #{self.nth}" if self.nth > 1 else "")


END = Boundary(END_CALL, 1, Side.AFTER)


class Point(str, Enum):
    """The fault points of the scenario matrix: names for three boundaries."""

    NONE = "none"
    AT_CHARGE = "at_charge"  # before the provider call: no money moves
    AFTER_CHARGE = "after_charge"  # after it: money moved, the function does not know
    AFTER_COMMIT = "after_commit"  # after the handler's last write

    def __str__(self) -> str:
        return self.value


POINT_BOUNDARIES: dict[Point, Boundary] = {
    Point.AT_CHARGE: Boundary(CHARGE_CALL, 1, Side.BEFORE),
    Point.AFTER_CHARGE: Boundary(CHARGE_CALL, 1, Side.AFTER),
    Point.AFTER_COMMIT: END,
}


class Step(str, Enum):
    """Where a concurrent copy can start, named for the charge step every handler has."""

    BEFORE_CHARGE = "before_charge"
    CHARGED = "charged"
    RECORDED = "recorded"

    def __str__(self) -> str:
        return self.value


STEP_BOUNDARIES: dict[Step, Boundary] = {
    Step.BEFORE_CHARGE: POINT_BOUNDARIES[Point.AT_CHARGE],
    Step.CHARGED: POINT_BOUNDARIES[Point.AFTER_CHARGE],
    Step.RECORDED: END,
}
_STEP_NAMES = {boundary: step.value for step, boundary in STEP_BOUNDARIES.items()}

#: The provider's own outcomes, as fault points: the provider answers the charge call with
#: them (see idem.core.provider). Not an exception the runtime raises: the provider's answer.
PROVIDER_POINTS = tuple(o.value for o in ProviderOutcome if o is not ProviderOutcome.OK)
#: Two more answers Stripe gives, which only a handler calling Stripe's SDK itself can be given
#: (idem.explore.sandbox.stripe_sdk; the loopback Stripe's faults, idem.sim.stripe.errors):
#: "provider_429", too many requests (https://docs.stripe.com/rate-limits), refused before the
#: endpoint executes, so nothing is saved for the key; and "needs_authentication", a card that
#: needs its holder: declined off-session (402 authentication_required), on-session a 200 whose
#: PaymentIntent waits in requires_action (https://docs.stripe.com/payments/paymentintents/lifecycle),
#: no money moved either way, the answer saved for the key.
SDK_POINTS = ("provider_429", "needs_authentication")
#: The outcomes in which no money moves and the answer is final for the order (a decline's kind).
FINAL_REFUSALS = ("declined", "needs_authentication")


def choice(kind: type[Enum], value: Any) -> Any:
    """`kind(value)`, or a ValueError that lists the valid names."""
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(member.value for member in kind)
        raise ValueError(f"unknown {kind.__name__.lower()} {value!r}; choose one of {names}") from None


class InjectedFault(Exception):
    """The error the runtime raises at a boundary: an ordinary exception, as a timeout is."""


class Crash(BaseException):
    """The process dies at a boundary: not an Exception, so no handler code catches it."""


@dataclass(frozen=True)
class FaultPlan:
    """Fail at `at` on the arrivals `times` names: once, always, or numbers like "1,3"."""

    at: Boundary | None = None
    times: str = "once"
    how: How = How.EXCEPTION
    outcome: str = ""  # a provider outcome (PROVIDER_POINTS): the provider answers with it at `at`
    #: how many times in a row it strikes: a lost answer, the SDK's attempts at the call (sdk_retries);
    #: before a call, the same call made again in the invocation (#n, #n+1, ...: a handler's own retries)
    run: int = 1
    #: a second plan, at another boundary: a call first made after this plan's fault (the family
    #: second_fault, idem.explore.families.second_fault), which fails too (before it, or its answer lost)
    also: "FaultPlan | None" = None
    #: a second plan's: only a request with this role at `at` (idem.sim.platform.call_roles), None for any; its
    #: arrivals are counted among that role's own
    role: str | None = None

    def strikes(self, boundary: "Boundary", role: str = "") -> bool:
        """Is `boundary` one of the places this plan fails (its own, or the next in its run), for a request
        with `role` there?"""
        at = self.at
        if self.role is not None:
            return at == boundary and role == self.role
        return at == boundary or (self.run > 1 and at is not None and at.side is Side.BEFORE and at.call == boundary.call
                                  and boundary.side is Side.BEFORE and at.nth < boundary.nth < at.nth + self.run)

    def over(self) -> "FaultPlan":
        """The plan once its outage is over (the family `again`'s redrive): no fault left but its second
        plan, a call only the fault led to, which still fails on its first arrival, whenever that comes."""
        return FaultPlan(also=self.also)

    def at_boundary(self, boundary: "Boundary", role: str = "") -> "FaultPlan":
        """The plan that fails `boundary` (a request with `role` there): its second plan where only that one
        strikes there, else this one."""
        if self.also is not None and not self.strikes(boundary, role) and self.also.strikes(boundary, role):
            return self.also
        return self

    def __post_init__(self) -> None:
        object.__setattr__(self, "how", choice(How, self.how))
        self.fails_on(1)  # validates `times`

    @classmethod
    def at_point(cls, point: str, times: str = "once", how: str = "exception") -> "FaultPlan":
        """The plan for one of the matrix's named points (`none` is no fault), or one of the
        provider's outcomes, which the provider gives at the charge call's boundary."""
        if point in PROVIDER_POINTS:
            return cls(POINT_BOUNDARIES[Point.AT_CHARGE], times, How.EXCEPTION, outcome=point)
        if point not in {p.value for p in Point}:
            names = ", ".join([p.value for p in Point] + list(PROVIDER_POINTS))
            raise ValueError(f"unknown point {point!r}; choose one of {names}")
        named = choice(Point, point)
        return cls(POINT_BOUNDARIES.get(named), times, how)

    @classmethod
    def from_demo_settings(cls, env: Mapping[str, str]) -> "FaultPlan":
        """The deploy demo's failure, from the stack's FAILURE_POINT and FAIL_TIMES settings:
        injected by whoever runs the function, never by the function itself."""
        return cls.at_point(env.get("FAILURE_POINT") or "none", env.get("FAIL_TIMES") or "once")

    @property
    def point(self) -> str:
        """The matrix name of this plan's boundary, or the boundary itself."""
        if self.outcome:
            return self.outcome
        for name, boundary in POINT_BOUNDARIES.items():
            if boundary == self.at:
                return name.value
        return "none" if self.at is None else str(self.at)

    def fails_on(self, arrival: int) -> bool:
        """Does the `arrival`-th arrival at the boundary fail?"""
        if self.times == "once":
            return arrival == 1
        if self.times == "always":
            return True
        try:
            chosen = {int(part) for part in self.times.split(",") if part.strip()}
        except ValueError:
            raise ValueError(f"fault times {self.times!r}: use once, always, or numbers like 1,3") from None
        if not chosen or min(chosen) < 1:
            raise ValueError(f"fault times {self.times!r}: arrivals are counted from 1")
        return arrival in chosen
