"""What both targets share: the demo's settings, reading the ledger back, and the report.

`read_state` is the workbook's query_state.py: after an upload, how many times did the
provider charge for it, what does the function's own ledger say, what record is left,
and did anything reach the failure queue.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.clock import Clock
from ..core.handlers.common import account_of
from ..core.ledger import Ledger
from ..core.provider import Provider
from .errors import DeployError

#: The demo: the function fails once after the provider charged, and Lambda retries it.
DEMO_FAULT = {"FailurePoint": "after_charge", "FailTimes": "once"}
DEMO_MODES = ("naive", "keyed")
DEFAULT_STACK = "idem-demo"


def parameters(mode: str, fault: dict[str, str] | None = None) -> dict[str, str]:
    """The demo profile's parameters (template.yaml deploys the production profile unless
    Profile is demo): the handler and the failure on purpose; a new version takes all traffic at
    once (prod's canary would make each deploy wait 5 minutes)."""
    return {"Profile": "demo", "HandlerMode": mode, "DeploymentType": "AllAtOnce",
            **(DEMO_FAULT if fault is None else fault)}


@dataclass
class RunReport:
    """One upload and what became of it."""

    mode: str
    key: str
    charges: int  # money moved for this upload, as the provider saw it
    ledger_charges: int  # charges the function's own ledger wrote for this upload
    record: str  # the idempotency record's status, or "-" (naive keeps none)
    dlq: int  # invocation records that reached the failure queue during this run
    attempts: list[str] = field(default_factory=list)  # one line per invocation

    def line(self) -> str:
        plural = "" if self.charges == 1 else "s"
        return (f"{self.mode}: {self.charges} charge{plural} for one upload "
                f"(ledger {self.ledger_charges}, record {self.record}, failure queue +{self.dlq})")

    def row(self) -> dict[str, Any]:
        return {"mode": self.mode, "object": self.key, "charges": self.charges,
                "ledger entries": self.ledger_charges, "record": self.record, "failure queue": self.dlq,
                "attempts": len(self.attempts)}


@dataclass
class Snapshot:
    ledger_charges: int
    dlq: int


def queue_depth(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url,
                                          AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def snapshot(dynamodb: Any, sqs: Any, outputs: dict[str, str], key: str, clock: Clock) -> Snapshot:
    ledger = Ledger(dynamodb, outputs["LedgerTableName"], clock)
    return Snapshot(ledger.entry(account_of(key))[0], queue_depth(sqs, outputs["FailureQueueUrl"]))


def read_state(dynamodb: Any, sqs: Any, outputs: dict[str, str], *, mode: str, key: str,
               reference: str, before: Snapshot, clock: Clock,
               attempts: list[str] | None = None) -> RunReport:
    """Read the stack's tables and queue back after one upload (query_state.py)."""
    ledger = Ledger(dynamodb, outputs["LedgerTableName"], clock)
    provider = Provider(dynamodb, outputs["ProviderTableName"], clock)
    after = snapshot(dynamodb, sqs, outputs, key, clock)
    mine = f"{outputs['BucketName']}/{key}#"  # records name their object in `source`
    records = [r for r in ledger.records() if r.source.startswith(mine)]
    return RunReport(mode=mode, key=key, charges=len(provider.charges(reference)),
                     ledger_charges=after.ledger_charges - before.ledger_charges,
                     record=str(records[-1].status) if records else "-",
                     dlq=after.dlq - before.dlq, attempts=list(attempts or []))


def empty_bucket(s3: Any, bucket: str) -> int:
    """Delete every version and delete marker (a versioned bucket must be empty to go).

    `aws s3 rm --recursive` is not enough on a versioned bucket: it only adds delete
    markers, and S3 refuses to delete a bucket while any version or marker is left."""
    removed = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                  for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if doomed:  # a page holds at most 1,000: as many as one delete_objects takes
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed, "Quiet": True})
            if answer.get("Errors"):  # quiet mode reports only the keys it could not delete
                first = answer["Errors"][0]
                raise DeployError(f"S3 kept {len(answer['Errors'])} object versions in {bucket} "
                                  f"(e.g. {first.get('Key')}: {first.get('Code')}); a bucket "
                                  "policy or object lock may protect them: remove them in the "
                                  "S3 console, then run the delete again")
            removed += len(doomed)
    return removed
