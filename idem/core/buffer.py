"""The production buffer's sizes, in one place: S3 -> SQS -> Lambda (template.yaml's prod profile).

The outage scenario (idem/explore/outage.py) runs with exactly these numbers on the virtual
clock, template.yaml's UploadQueue, its event source mapping and FailureQueue carry them
(tests/test_outage.py compares), and the reconciliation waits `reconcile_lag_seconds` before it
judges a window (ReconcileFunction's RECONCILE_LAG_SECONDS).

Why these values (the rules are AWS's, cited where they are used):
- visibility timeout 180 s: six times the function's 30 s timeout, as AWS advises for an SQS
  event source (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): a
  failing order is tried again every 3 minutes, so it is charged within 3 minutes of recovery;
- maxReceiveCount 150: a message is received at most 150 times before the redrive policy moves it
  to the dead-letter queue (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html):
  149 waits of 180 s, 7.45 hours: a 6-hour provider outage is ridden out with 1.45 hours to spare;
- retention 14 days (1,209,600 s, SQS's most), far past the 7.45 hours of retries.
  "the expiration of a message is always based on its original enqueue timestamp": a message
  moved to the DLQ keeps its age, so the DLQ keeps 14 days too
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html);
- batch size 10 (Lambda's default for SQS), with ReportBatchItemFailures: only the failed orders
  of a batch come back.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BufferSizing:
    function_timeout_seconds: int = 30
    visibility_timeout_seconds: int = 180
    max_receive_count: int = 150
    retention_seconds: int = 1_209_600
    dead_letter_retention_seconds: int = 1_209_600
    batch_size: int = 10

    def __post_init__(self) -> None:
        if self.visibility_timeout_seconds < 6 * self.function_timeout_seconds:
            raise ValueError("the visibility timeout should be at least six times the function's timeout")
        if self.retention_seconds <= self.rides_out_seconds:
            raise ValueError("the queue must keep a message longer than its retries last")

    @property
    def rides_out_seconds(self) -> int:
        """The longest provider outage an order that arrives at its start survives: its last
        receive comes (maxReceiveCount - 1) visibility timeouts after its first."""
        return (self.max_receive_count - 1) * self.visibility_timeout_seconds

    @property
    def reconcile_lag_seconds(self) -> int:
        """How long after an upload its charge may still be made and booked: every receive, and
        the longest invocation (900 s) after the last."""
        return self.max_receive_count * self.visibility_timeout_seconds + 900


PROD = BufferSizing()
