"""What became of one schedule: its effects, its verdict, what is wrong, and the answers its run asked for."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .verdicts import BREAKS

if TYPE_CHECKING:
    from ..families.schedule import Schedule


@dataclass
class Result:
    schedule: Schedule
    effects: dict[str, int]
    dlq: int
    verdict: str
    attempts: list[Any] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # what is wrong, named: "a charge with no ledger line"
    clean: bool = False  # the clean run itself, reported because it is already wrong (CleanRunBreaks)
    left: list[Any] = field(default_factory=list)  # what its judged writes left (idem.explore.judge.state)
    #: the answers its run asked for (`same_run`): the most arrivals at each boundary, and the
    #: attempt numbers whose retry was decided
    reached: dict[Any, int] = field(default_factory=dict)
    #: each (boundary, role) its run reached: what each AWS call asked there (idem.sim.platform.call_roles)
    roles: frozenset[tuple[Any, str]] = frozenset()
    retries_asked: frozenset[int] = frozenset()
    #: the schedule whose run this result is (itself, or an earlier schedule that ran the same)
    ran_as: "Schedule | None" = None
    #: each charge it left at the provider, as (amount, currency): what the clean run's are to the
    #: schedules (`idem.explore.judge.money`)
    paid: list[tuple[Any, Any]] = field(default_factory=list)
    #: every charge went to the customer the check linked to its upload's account (money.by_link)
    paid_by_link: bool = False
    #: every charge it kept is a hold still uncaptured (capture_method=manual): for the clean run, the
    #: handler's effect is the hold, and the schedules count holds as its charges (runner.kept_charges)
    held: bool = False
    #: the ledger lines its handler sent to the books' table that DynamoDB refused as invalid
    #: (`idem.explore.judge.books.refused_lines`): read of the clean run
    refused_lines: list[str] = field(default_factory=list)
    #: the charge requests the provider refused as invalid (`Watch.refused`): read of the clean run
    refused_charges: list[str] = field(default_factory=list)
    #: the deliveries of objects the function wrote itself into its trigger's bucket, by number (SQS: message id), with
    #: each one's key (`idem.explore.run.own_writes`), and (charges made for the check's upload,
    #: charges made by the invocations of those writes)
    own_writes: dict[int | str, str] = field(default_factory=dict)
    own_charges: tuple[int, int] = (0, 0)

    @property
    def breaks(self) -> bool:
        return self.verdict in BREAKS or self.clean
