"""The triggers a function can have besides S3's own notification: SQS and EventBridge.

- **s3**: S3 invokes the function asynchronously (`LocalLambda`, the default).
- **eventbridge**: S3 sends `Object Created` to EventBridge, whose rule invokes the function
  asynchronously too, so Lambda's retries and on-failure destination apply as for s3. The event
  has another shape (`eventbridge_event`). S3 delivers events to EventBridge at least once
  ("durable delivery", https://docs.aws.amazon.com/eventbridge/latest/ref/event-delivery-level.html),
  and EventBridge retries a delivery it could not confirm
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html): a copy.
- **sqs**: the S3 event is a message in an SQS queue, and an event source mapping polls it and
  invokes the function synchronously with a batch of messages (`SqsFedLambda`). The rules it keeps:
  - a batch holds up to BatchSize messages
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html);
  - when the invocation fails, every message of the batch comes back after the queue's visibility
    timeout; with `ReportBatchItemFailures` the function may instead return
    `{"batchItemFailures": [{"itemIdentifier": messageId}]}`, and only those come back. An empty or
    null list is a full success; an itemIdentifier that is empty, null or not in the batch makes the
    whole batch a failure; without ReportBatchItemFailures the response is ignored and a returning
    function deletes the whole batch
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html);
  - the visibility timeout is at least the function's timeout (Lambda refuses a mapping otherwise)
    and AWS advises six times it (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html):
    180 s for the 30 s timeout here;
  - a message received more than maxReceiveCount times moves to the dead-letter queue named by the
    queue's redrive policy, body unchanged
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html):
    that message, not Lambda's on-failure destination, is the failure record;
  - a standard queue delivers at least once: a message can be received again, even while another
    invocation still works on it
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html);
  - a message older than the queue's retention period (MessageRetentionPeriod: 60 s to 14 days,
    4 days by default) is deleted: never received again, and not moved to the dead-letter queue
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html).

The source queue is modelled here, on the runtime's virtual clock (moto's queue keeps visibility
on its own clock and gives no hook at a handler's boundaries); the dead-letter queue is the world's
real moto failure queue.
"""
from __future__ import annotations

import base64
import hashlib
import heapq
import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Container

from ..core.clock import iso8601
from ..core.events import S3Object
from .runtime import Attempt, LocalLambda, on_clock, work_of
from .runtime.local_lambda import _Pending
from .world import ACCOUNT, REGION, UPLOAD_EVENTS

#: The triggers `idem check --trigger` knows.
TRIGGERS = ("s3", "sqs", "eventbridge")
#: Six times the runtime's 30 s function timeout (services-sqs-configure, above).
VISIBILITY_TIMEOUT = 180.0
#: SQS's default MessageRetentionPeriod: 4 days (API_SetQueueAttributes, above)
RETENTION = 345_600.0


#: EventBridge's `detail.reason` for an upload by each S3 API (ev-events.html: "PutObject", "POST Object",
#: "CompleteMultipartUpload"), by the event name S3 gives it: the API's name, as UPLOAD_EVENTS keys them
REASONS = {event: api for api, event in UPLOAD_EVENTS.items()}


def envelope_time(event_time: str | None) -> str:
    """EventBridge's envelope `time`, in whole seconds (`2021-11-12T00:00:00Z` in S3's page for the
    event, ev-events.html above, and in EventBridge's event structure:
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html: "2017-12-22T18:43:48Z"), from S3's
    eventTime, which has milliseconds (`2026-01-01T00:00:00.000Z`)."""
    if not event_time:
        return "2026-01-01T00:00:00Z"
    return event_time.split(".", 1)[0].rstrip("Z") + "Z"


def eventbridge_event(obj: S3Object, event_id: str | None = None, *,
                      request_id: str = "N4N7GDK58NMKJ12R") -> dict[str, Any]:
    """The `Object Created` event EventBridge delivers for an upload, with the key as stored: S3's
    page for this event (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html) does
    not say the key is URL-encoded, as its page for the Lambda event does; AWS's Powertools decodes
    it all the same (`idem.explore.key_decoding.EVENTBRIDGE`). Its `id` is one per
    upload (the same in every copy EventBridge delivers of it), made from the object's facts;
    `request_id` is the PUT's x-amz-request-id (detail.request-id), one per upload too."""
    event_id = event_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{obj.uri}#{obj.sequencer}"))
    detail_object: dict[str, Any] = {"key": obj.key, "size": obj.size, "etag": obj.etag,
                                     "sequencer": obj.sequencer}
    if obj.version_id is not None:
        detail_object["version-id"] = obj.version_id
    return {
        "version": "0", "id": event_id, "detail-type": "Object Created", "source": "aws.s3",
        "account": ACCOUNT, "time": envelope_time(obj.event_time), "region": obj.region,
        "resources": [f"arn:aws:s3:::{obj.bucket}"],
        "detail": {"version": "0", "bucket": {"name": obj.bucket}, "object": detail_object,
                   "request-id": request_id, "requester": ACCOUNT,
                   "source-ip-address": "127.0.0.1", "reason": REASONS.get(obj.event_name, "PutObject")},
    }


#: The Subject S3 publishes its notifications to a topic with: what S3's messages carry as delivered (SNS's
#: page: "If no Subject was specified, then this name-value pair does not appear"; S3's pages do not name it).
S3_SUBJECT = "Amazon S3 Notification"


@dataclass
class SnsTopic:
    """An SNS topic that the bucket notifies and the source queue subscribes to (Protocol sqs). SNS sends
    the queue a JSON document: "the subject and message that were published to the topic along with
    metadata about the message" (https://docs.aws.amazon.com/sns/latest/dg/sns-sqs-as-subscriber.html;
    the fields: https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html), unless the
    subscription sets RawMessageDelivery true: then "the message is sent as is"
    (https://docs.aws.amazon.com/sns/latest/dg/sns-large-payload-raw-message-delivery.html)."""

    name: str
    raw_message_delivery: bool = False
    published: dict[str, int] = field(default_factory=dict)  # how often each upload's event was published

    @property
    def arn(self) -> str:
        return f"arn:aws:sns:{REGION}:{ACCOUNT}:{self.name}"

    def body(self, message: str, upload: str, now: float) -> str:
        """The SQS message body for S3's `message` about `upload` (its URI and sequencer), published at
        `now` (epoch seconds): SNS's envelope, or the message itself with raw delivery. Its MessageId is
        "unique for each message published" (each publish of one upload's event is a new one); ids,
        signature and subscription are made from the topic and the upload, the same every run."""
        if self.raw_message_delivery:
            return message
        n = self.published[upload] = self.published.get(upload, 0) + 1
        message_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.arn}#{upload}#{n}"))
        subscription = f"{self.arn}:{uuid.uuid5(uuid.NAMESPACE_URL, self.arn + '#sqs')}"
        signed = hashlib.sha512(f"{message_id}\n{message}".encode()).digest()
        host = f"https://sns.{REGION}.amazonaws.com"
        return json.dumps({
            "Type": "Notification", "MessageId": message_id, "TopicArn": self.arn, "Subject": S3_SUBJECT,
            "Message": message, "Timestamp": iso8601(now), "SignatureVersion": "1",
            # a SHA1withRSA signature of a 2,048-bit key: 256 bytes, 344 characters of base64
            "Signature": base64.b64encode((signed * 4)[:256]).decode(),
            "SigningCertURL": f"{host}/SimpleNotificationService-{hashlib.sha256(self.arn.encode()).hexdigest()[:32]}.pem",
            "UnsubscribeURL": f"{host}/?Action=Unsubscribe&SubscriptionArn={subscription}"})


@dataclass(frozen=True)
class SqsMapping:
    """The event source mapping's settings, and the source queue's."""

    batch_size: int = 10  # Lambda's default BatchSize for SQS
    visibility_timeout: float = VISIBILITY_TIMEOUT
    max_receive_count: int = 3  # the redrive policy's maxReceiveCount
    report_batch_item_failures: bool = True  # FunctionResponseTypes: [ReportBatchItemFailures]
    queue_name: str = "uploads"
    retention: float = RETENTION  # the queue's MessageRetentionPeriod, in seconds

    def __post_init__(self) -> None:
        if not 60 <= self.retention <= 1_209_600:
            raise ValueError(f"MessageRetentionPeriod is 60-1209600 seconds; got {self.retention:.0f}")
        if not 1 <= self.batch_size <= 10_000:
            raise ValueError(f"BatchSize is 1-10000 for a standard queue; got {self.batch_size}")
        if not 1 <= self.max_receive_count <= 1000:
            raise ValueError(f"maxReceiveCount is 1-1000; got {self.max_receive_count}")

    @property
    def queue_arn(self) -> str:
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{self.queue_name}"


@dataclass
class Message:
    """One stored copy of a message in the source queue."""

    message_id: str
    body: str
    sent_at: float
    copy: int = 1  # 1: the message; 2: a copy SQS delivers again (at least once)
    visible_at: float = 0.0
    receives: int = 0
    receipt: str = ""
    gone: bool = False  # deleted, or moved to the dead-letter queue
    received_at: float = 0.0  # its latest receive (ChangeMessageVisibility's 12 hours count from it)


@dataclass
class Batch:
    """What one invocation received."""

    messages: list[Message]
    receipts: dict[str, str] = field(default_factory=dict)  # message id -> this receive's handle


class SqsFedLambda(LocalLambda):
    """A LocalLambda whose function an SQS event source mapping invokes (see the module docstring).
    `send_message` puts a message in the source queue; `copy_messages` and `receive_copy_now`
    are SQS's at-least-once copies (after the first invocation, or while it runs)."""

    def __init__(self, world: Any, env: dict[str, str], *, mapping: SqsMapping = SqsMapping(),
                 dead_letter_url: str | None = None, topic: SnsTopic | None = None, **options: Any) -> None:
        super().__init__(world, env, **options)
        self.topic = topic  # the SNS topic the queue is fed through (its bodies are SNS's), or None
        if mapping.visibility_timeout < self.timeout:
            raise ValueError(f"the queue's visibility timeout ({mapping.visibility_timeout:.0f} s) is shorter "
                             f"than the function's timeout ({self.timeout:.0f} s): Lambda refuses such a mapping")
        self.mapping = mapping
        self.dead_letter_url = dead_letter_url or world.queue_url
        self.messages: list[Message] = []
        self._polls: list[tuple[float, int]] = []
        self._poll_seq = itertools.count()
        self._ids = itertools.count(1)
        self._work = ""  # every invocation of one run is one piece of work (see work_of)
        #: messages about objects the function wrote itself (idem.explore.run.own_writes): their own work
        self.own_messages: Container[str] = frozenset()
        self.provider = DeclineWatch(self.provider)
        self.watch.declines = self.provider.declined
        self.watch.sqs_source = self  # the function's own DeleteMessage on this queue (idem.sim.sqs_deletes)
        _source_queue_in_moto(world, mapping.queue_name)

    def delete_received(self, handle: Any) -> bool:
        """The function's own DeleteMessage with `handle` (idem.sim.sqs_deletes): the message whose
        latest receive it is is deleted; a handle of an earlier receive deletes nothing but is no
        error. False: no receive ever had this handle (ReceiptHandleIsInvalid)."""
        if not isinstance(handle, str):
            return False
        for message in self.messages:
            if message.receipt == handle:
                message.gone = True
                return True
        ids = {m.message_id for m in self.messages}
        return handle.split("#", 1)[0] in ids  # an earlier receive of a message of this queue

    # -- the producer's side, and SQS's copies ------------------------------------------------
    def send_message(self, body: str, *, at: float | None = None) -> str:
        """A message sent to the source queue (now, or `at` seconds after the clock's start)."""
        when = self.clock.now() if at is None else self.clock.start + at
        message = Message(self._new_id(), body, when, visible_at=when)
        self.messages.append(message)
        self._work = self._work or work_of({"queue": self.mapping.queue_arn, "first": message.message_id})
        self._poll_at(when)
        return message.message_id

    def copy_messages(self, *, at: float) -> None:
        """SQS stores every message sent so far again: each is delivered once more, `at` seconds
        after the clock's start, whatever becomes of the first (a standard queue's duplicate)."""
        when = self.clock.start + at
        for message in [m for m in self.messages if m.copy == 1]:
            self.messages.append(Message(message.message_id, message.body, message.sent_at, copy=2,
                                         visible_at=when))
        self._poll_at(when)

    def receive_copy_now(self) -> None:
        """A copy of every first-sent message is received now and invoked at once, while the
        invocation that reached this boundary is still running."""
        copies = [Message(m.message_id, m.body, m.sent_at, copy=2, visible_at=self.clock.now())
                  for m in self.messages if m.copy == 1]
        self.messages += copies
        self._poll(only=copies)

    def receive_now(self, body: str) -> None:
        """A new message, sent and received at once by another of the mapping's pollers (a batch
        of its own), while the invocation that reached this boundary is still running."""
        self.send_message(body)
        self._poll(only=[self.messages[-1]])

    # -- the mapping's side ----------------------------------------------------------------------
    def run(self) -> list[Attempt]:
        with on_clock(self.clock) if not self.wired else _Still() as move:
            while self._polls:
                due, _ = heapq.heappop(self._polls)
                self.clock.advance_to(due)
                move(self.clock.now())
                self._poll()
        return self.attempts

    def after_failure(self, pending: _Pending, attempt: Attempt) -> None:
        """Nothing: a failed batch's messages come back when their visibility timeout ends."""

    def work_of(self, event: dict[str, Any]) -> str:
        """The run's one piece of work; a batch of the function's own writes alone is its own (its
        arrivals at a boundary are not the run's, as an own write's event is its own work on S3)."""
        ids = [r.get("messageId") for r in event.get("Records", []) if isinstance(r, dict)]
        if ids and all(i in self.own_messages for i in ids):
            return "own:" + ",".join(sorted(ids))
        return self._work or work_of(event)

    def _poll(self, only: list[Message] | None = None) -> None:
        """Receive a batch of visible messages (moving those received too often to the
        dead-letter queue), invoke the function with it, and settle the batch."""
        now = self.clock.now()
        batch, later = Batch([]), False
        for message in only if only is not None else self.messages:
            if message.gone or message.visible_at > now:
                continue
            if now - message.sent_at > self.mapping.retention:
                message.gone = True  # SQS deleted it at the end of its retention period: no receive, no DLQ
                continue
            if len(batch.messages) == self.mapping.batch_size or message.message_id in batch.receipts:
                later = True  # the next poll takes it (one copy of a message per batch)
                continue
            self.retries_asked.add(message.receives)  # received again only while receives <= retries
            if message.receives >= self.mapping.max_receive_count:
                # its receive count would pass maxReceiveCount: SQS moves it to the dead-letter queue
                # (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html)
                self._to_dead_letter_queue(message)
                continue
            message.receives += 1
            message.receipt = f"{message.message_id}#{message.copy}#{message.receives}"
            message.visible_at, message.received_at = now + self.mapping.visibility_timeout, now
            batch.messages.append(message)
            batch.receipts[message.message_id] = message.receipt
        if not batch.messages:
            return
        delivery = max(m.copy for m in batch.messages)
        receives = max(m.receives for m in batch.messages)
        pending = _Pending(now, 0, self._event(batch, now), delivery, receives, self._new_id(), now)
        attempt = self._invoke(pending)
        attempt.messages = [m.message_id for m in batch.messages]
        self._settle(batch, attempt)
        if later:
            self._poll_at(now)

    def _settle(self, batch: Batch, attempt: Attempt) -> None:
        """Delete what succeeded; what failed becomes visible again after the timeout."""
        failed = {m.message_id for m in batch.messages}
        if not attempt.failed:
            failed, why = self.reported_failures(attempt.result, batch)
            if failed:
                attempt.outcome, attempt.error = "partial", why
        for message in batch.messages:
            if message.message_id not in failed and message.receipt == batch.receipts[message.message_id]:
                message.gone = True  # DeleteMessage with this receive's handle
        for message in batch.messages:
            if not message.gone:
                self._poll_at(message.visible_at)

    def reported_failures(self, result: Any, batch: Batch) -> tuple[set[str], str]:
        """The message ids a returning function reported failed, and why (see the module docstring)."""
        everything = {m.message_id for m in batch.messages}
        if not self.mapping.report_batch_item_failures or not isinstance(result, dict):
            return set(), ""
        items = result.get("batchItemFailures")
        if not items:
            return set(), ""  # an empty or null list: the whole batch succeeded
        if not isinstance(items, list):
            return everything, "batchItemFailures is not a list: the whole batch failed"
        ids = [item.get("itemIdentifier") if isinstance(item, dict) else None for item in items]
        if any(not isinstance(i, str) or i not in everything for i in ids):
            return everything, f"batchItemFailures names {ids!r}, not all ids of the batch: the whole batch failed"
        return set(ids), f"batchItemFailures: {len(set(ids))} of {len(everything)} messages reported failed"

    def _event(self, batch: Batch, now: float) -> dict[str, Any]:
        """The event Lambda passes: one record per message
        (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""
        millis = lambda t: str(int(t * 1000))  # noqa: E731
        return {"Records": [{
            "messageId": m.message_id, "receiptHandle": batch.receipts[m.message_id], "body": m.body,
            "attributes": {"ApproximateReceiveCount": str(m.receives), "SentTimestamp": millis(m.sent_at),
                           "SenderId": "AIDAIENQZJOLO23YVJ4VO",
                           "ApproximateFirstReceiveTimestamp": millis(now)},
            "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
            "eventSourceARN": self.mapping.queue_arn, "awsRegion": REGION} for m in batch.messages]}

    def _to_dead_letter_queue(self, message: Message) -> None:
        message.gone = True  # each stored copy that runs out of receives moves on its own
        self.world.send_to_queue(self.dead_letter_url, message.body)

    def _poll_at(self, when: float) -> None:
        heapq.heappush(self._polls, (when, next(self._poll_seq)))



def _source_queue_in_moto(world: Any, name: str) -> None:
    """The source queue exists on the world's AWS too, by its name, so a function can look its URL up
    (GetQueueUrl) to delete its own messages; its messages are the model's, not moto's. Once a world."""
    made = world.__dict__.setdefault("_source_queues", set())
    if name in made:
        return
    try:
        world.sqs.get_queue_url(QueueName=name)
    except Exception:  # noqa: BLE001 - not there yet: made here (a template may have made it already)
        world.sqs.create_queue(QueueName=name)
    made.add(name)


class _Still:
    """Time stands still for a wired entry point: there is nothing to move."""

    def __enter__(self) -> Callable[[float], Any]:
        return lambda _when: None

    def __exit__(self, *exc: Any) -> None:
        return None


class DeclineWatch:
    """The provider client, noting the reference of every charge it declined (402): a decline
    is a final answer for that upload only, not for the rest of a batch."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.declined: list[str] = []

    def charge(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.inner.charge(*args, **kwargs)
        except Exception as error:
            if getattr(error, "http_status", None) == 402:
                self.declined.append(str(kwargs.get("reference", "")))
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
