"""One schedule: one way the platform can treat one upload (or two uploads of one name), its
label as a person reads it, its family and its size."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...sim.platform.batch_partial import UNPROCESSED, partial_words
from ...sim.platform.call_roles import shown
from ...sim.faults import Side
from . import key_decoding, runs, second_fault, upload_kinds

RETRIES = (0, 1, 2)
ARRIVALS = (1, 2, 3)
#: The buckets a second upload of the same name is tried in (Schedule.overwrite).
VERSIONING = ("versioned", "unversioned")
#: What a second upload of the same name is (Schedule.second).
SECONDS = ("order", "retried_put")


@dataclass(frozen=True)
class Schedule:
    """One way the platform can treat one upload (or, with `overwrite`, two uploads of one name)."""

    fault: Any = None  # a FaultPlan, or None for no fault
    delivery: str = "single"  # single, duplicate, concurrent, between or same_batch (see `second`)
    copy_at: Any = None  # where the first invocation is when a concurrent copy starts
    retries: int = 2
    #: the call at `copy_at` is slow: in flight until 1 s before the invocation's deadline, and
    #: the copy starts while it is (LocalLambda.in_flight)
    slow: bool = False
    #: "", or a second upload of the same name: "versioned" (a new version) or "unversioned" (the
    #: same key, a new eTag and sequencer). It is what `delivery` delivers instead of a copy;
    #: `delivery` "between": it lands after the first invocation failed, before Lambda's retry;
    #: "same_batch" (--trigger sqs): its message is in the first upload's batch.
    overwrite: str = ""
    #: what the second upload is (with `overwrite`): "order", a second order at the same name (a
    #: new order_id, new bytes: it gets its own charge), or "retried_put", the uploader's retried
    #: PUT of the same bytes (the same order: no charge beyond the clean run's). See docs/one_charge_per_order.md.
    second: str = "order"
    #: under --trigger sqs: S3 delivered the notification twice, two messages with two ids
    sent_twice: bool = False
    #: the upload's name is as long as S3 allows (1,024 bytes of UTF-8: `triggers.object_name`)
    long_name: bool = False
    name: str = ""  # the family `names`: the upload's file name, one that needs URL-decoding (key_decoding)
    upload: str = ""  # the family `uploads`: the S3 API the order is uploaded by, if not PutObject (upload_kinds)
    timing: Any = None  # where in its documented range each delay falls (idem.explore.families.timings; None: low ends)
    later: Any = None  # a schedule of the families where time and accounts matter (idem.explore.families.timed.Later)

    def label(self) -> str:
        fault = "no fault" if self.fault is None or self.fault.at is None else (
            f"every {partial_words(self.fault.at.call)} {self.fault.at} on arrival {self.fault.times}" + runs.describe(self.fault)
            if self.fault.outcome == UNPROCESSED else
            f"the provider answers {self.fault.outcome} {self.fault.at} on arrival {self.fault.times}"
            if self.fault.outcome else f"{self.fault.how} {self.fault.at} on arrival {self.fault.times}"
            + runs.describe(self.fault))
        if self.fault is not None and self.fault.also is not None:
            also = self.fault.also
            call = f"{also.how} {also.at}" + (f" ({shown(also.role)})" if also.role else "")
            fault = (f"{call}, a call the clean run never made, on its first arrival" if self.fault.at is None
                     else f"{fault}, then {call} on its first arrival")
        if self.later is not None:
            delivery = self.later.label(self.timing, self.copy_at)
        elif self.overwrite:
            what = ("the uploader's retried PUT (same bytes)" if self.second == "retried_put"
                    else "a second order at the same name")
            second = f"{what} ({'new version' if self.overwrite == 'versioned' else 'unversioned: new sequencer'})"
            if self.long_name:
                second += " at a name of 1,024 bytes"
            delivery = (f"{second}, while the first is {self.copy_at}" if self.delivery == "concurrent"
                        else f"{second}, between the first's failed attempt and its retry"
                        if self.delivery == "between"
                        else f"{second}, its message in the same batch as the first's"
                        if self.delivery == "same_batch" else f"{second}, after the first is done")
        elif self.slow:
            call = f"{self.copy_at.call}{f' #{self.copy_at.nth}' if self.copy_at.nth > 1 else ''}"
            side = "request" if self.copy_at.side is Side.BEFORE else "answer"
            delivery = (f"slow {call} (its {side} in flight until 1 s before the timeout), "
                        + ("a copy meanwhile" if self.delivery == "concurrent" else "no copy"))
        elif self.sent_twice:
            delivery = "S3 sent the notification twice (two messages, two message ids)"
        else:
            delivery = f"a copy starts {self.copy_at}" if self.delivery == "concurrent" else self.delivery
        delivery += f", {key_decoding.label(self.name)}" if self.name else ""
        delivery += f", {upload_kinds.label(self.upload)}" if self.upload else ""
        return f"{fault}; {delivery}; {self.retries} {'retry' if self.retries == 1 else 'retries'}"

    @property
    def dimension(self) -> str:
        """Which family of schedules this one belongs to (DIMENSIONS)."""
        if self.fault is not None and self.fault.also is not None:
            return second_fault.FAMILY
        return (self.later.kind if self.later else "overwrite" if self.overwrite else "slow" if self.slow
                else key_decoding.FAMILY if self.name else upload_kinds.FAMILY if self.upload else "runs" if getattr(self.fault, "run", 1) > 1 else "faults")

    @property
    def size(self) -> tuple[int, ...]:
        """Smaller schedules are easier to read: fewer copies, retries and failing arrivals."""
        arrivals = 0 if self.fault is None else ((len(self.fault.times.split(",")) + min(self.fault.run, 4) - 1
                                                  if self.fault.at is not None else 0) + (self.fault.also is not None))
        return ({"single": 0, "duplicate": 1, "concurrent": 2, "between": 2, "same_batch": 1}[self.delivery] + 2 * self.slow
                + bool(self.overwrite) + self.sent_twice + self.long_name + bool(self.later) + bool(self.name) + bool(self.upload), self.retries, arrivals)

