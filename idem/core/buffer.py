"""The production buffer's sizes, in one place: S3 -> SQS -> Lambda (template.yaml's prod profile).

The outage scenario (idem/explore/outage.py) runs with exactly these numbers on the virtual
clock, template.yaml's UploadQueue, its event source mapping and FailureQueue carry them
(tests/test_outage.py compares), and the reconciliation waits `reconcile_lag_seconds` before it
judges a window (ReconcileFunction's RECONCILE_LAG_SECONDS).

Why these values (the rules are AWS's, cited where they are used):
- function timeout 60 s, from the handler's own time budget (handlers/keyed_settings.py, the
  bounded calls it makes): keyed starts an upload after the first only while
  `UPLOAD_PATH_SECONDS` (26 s: 4 AWS calls of at most 3.5 s each, 3 provider calls of at most
  4 s) are left, so a batch of 10 is charged in one invocation when
  cold start's secret (3.5 s) + 9 uploads + 26 s fit: 43 s at Stripe's usual 1.5 s a charge,
  56.5 s at twice that (DESIGN_UPLOAD_SECONDS), rounded up to the minute (`batch_seconds`);
- visibility timeout 360 s: six times the function's timeout, as AWS advises for an SQS
  event source ("at least six times the timeout that you configure on your function":
  https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): a failing order is
  tried again every 6 minutes, so it is charged within 6 minutes of recovery;
- maxReceiveCount 75: a message is received at most 75 times before the redrive policy moves it
  to the dead-letter queue (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html):
  74 waits of 360 s, 7.4 hours: a 6-hour provider outage is ridden out with 1.4 hours to spare,
  and the move comes at 75 x 360 s = 7.5 hours;
- retention 14 days (1,209,600 s, SQS's most), far past the 7.4 hours of retries.
  "the expiration of a message is always based on its original enqueue timestamp": a message
  moved to the DLQ keeps its age, so the DLQ keeps 14 days too
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html);
- batch size 10 (Lambda's default for SQS), with ReportBatchItemFailures: only the failed orders
  of a batch come back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .handlers.keyed_settings import AWS_CALL_SECONDS, SLOWEST_PATH_SECONDS, UPLOAD_PATH_SECONDS

#: The handler's slowest path with its rarer calls too (a takeover's second put, keeping the saved
#: method, re-booking a deleted claim: 3 AWS calls): 40 s, inside the stack's 60 s.
WORST_PATH_SECONDS = SLOWEST_PATH_SECONDS + 3 * AWS_CALL_SECONDS

#: Stripe's usual time for a confirmed charge, the top of the 0.8-1.5 s measured in issue 40
#: (an observation, not a number Stripe publishes), and the time per upload a batch is sized
#: for: twice that, so a slow hour at Stripe still charges a whole batch in one invocation.
USUAL_UPLOAD_SECONDS = 1.5
DESIGN_UPLOAD_SECONDS = 2 * USUAL_UPLOAD_SECONDS


def batch_seconds(batch_size: int, seconds_per_upload: float) -> float:
    """How long an invocation must be allowed for its batch's last upload still to start: keyed
    (keyed.enough_time) starts an upload after the first only while UPLOAD_PATH_SECONDS are
    left, and a cold start first reads the secret (one AWS call, its bound AWS_CALL_SECONDS)."""
    return AWS_CALL_SECONDS + (batch_size - 1) * seconds_per_upload + UPLOAD_PATH_SECONDS


def timeout_for(batch_size: int, seconds_per_upload: float = DESIGN_UPLOAD_SECONDS) -> int:
    """The function's timeout: batch_seconds rounded up to the whole minute."""
    return 60 * math.ceil(batch_seconds(batch_size, seconds_per_upload) / 60)


@dataclass(frozen=True)
class BufferSizing:
    function_timeout_seconds: int = 60  # timeout_for(10): 56.5 s rounded up
    visibility_timeout_seconds: int = 360  # six times the timeout
    max_receive_count: int = 75  # 75 x 360 s = 7.5 hours, as 150 x 180 s were
    retention_seconds: int = 1_209_600
    dead_letter_retention_seconds: int = 1_209_600
    batch_size: int = 10

    def __post_init__(self) -> None:
        if self.visibility_timeout_seconds < 6 * self.function_timeout_seconds:
            raise ValueError("the visibility timeout should be at least six times the function's timeout")
        if self.function_timeout_seconds <= SLOWEST_PATH_SECONDS:
            raise ValueError("the function's timeout must outlast one upload's slowest path")
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
