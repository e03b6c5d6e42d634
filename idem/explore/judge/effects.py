"""Where a schedule's effects landed, read on the far side of each boundary: the provider's charges,
the books' lines, the failure queue, the handler's own queues; and the counts per upload and per order."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Collection, Iterable, Sequence

from ...sim.runtime import work_of
from ...sim.world import empty_queue, pk_text
from ..run import triggers
from . import books as books_per_charge
from .books import Books
from .result import Result
from .verdicts import BOOKS as LINES, MONEY as CHARGES, Verdict

if TYPE_CHECKING:
    from ..families.schedule import Schedule


def lines_booked(world: Any, table: str, attribute: str, seen: set[str]) -> set[str]:
    """The keys of the ledger lines among the items in `table` that carry `attribute`, but those in
    `seen`, read from the table itself (`LocalWorld.table_items`: what a consistent Scan returns),
    judged per charge (`idem.explore.judge.books`: a done record keeping the charge id is no second line).
    `seen` grows by every such item."""
    items = triggers.items_with(world, table, attribute, seen)
    seen |= {pk_text(item.get("pk")) for item in items}
    return set(books_per_charge.lines(items, attribute))


def failures_for(world: Any, uploads: Sequence[Any], own_keys: Collection[str] = ()) -> list[int]:
    """Take every message out of the failure queue; count those about each upload: Lambda's
    destination records by their payload, a handler's own message by its body. One upload: a
    message naming its key (plain, URL-encoded, or either inside JSON). Two of one name: a message
    naming its sequencer (every destination record carries the whole event); a message naming only
    the key counts for neither, since it cannot say which upload it is about. A message naming one
    of `own_keys` (objects the function wrote itself at other names, whose events came back to it:
    `idem.explore.run.own_writes`) is about that object, not an upload."""
    texts = []
    own_forms = [form for key in own_keys for form in triggers.key_forms(key)]
    for message in drain(world, world.queue_url):
        try:
            body = json.loads(message["Body"])
        except ValueError:
            body = message["Body"]
        payload = body.get("requestPayload", body) if isinstance(body, dict) else body
        text = message["Body"] + "\n" + json.dumps(payload)
        if not any(form in text for form in own_forms):
            texts.append(text)
    if len(uploads) == 1:
        forms = triggers.key_forms(uploads[0].key)
        return [sum(any(form in text for form in forms) for text in texts)]
    return [sum(bool(obj.sequencer) and obj.sequencer in text for text in texts) for obj in uploads]


def drain(world: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message in the queue, taken out of it (`LocalWorld.take_messages`: as received
    and deleted, without the calls)."""
    return list(world.take_messages(queue_url))


def delivered(world: Any, queue_url: str) -> int:
    """The messages a handler's own queue delivers, then the queue emptied (`empty_queue`)."""
    count = 0
    while batch := world.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10,
                                             VisibilityTimeout=900).get("Messages", []):
        count += len(batch)
    empty_queue(queue_url)
    return count


#: AWS calls whose effect lands in a queue: counted as the messages the queue delivers, so a
#: FIFO queue's deduplication (MessageDeduplicationId, a 5-minute window:
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html)
#: is the queue's, as moto models it.
QUEUE_SENDS = ("sqs:SendMessage", "sqs:SendMessageBatch")
#: Publishes to a FIFO SNS topic are counted the same way, as the messages the check's own FIFO
#: queue subscribed to that topic delivers (`idem.sim.boundary._fifo_topic`): the topic's
#: deduplication is the topic's. Publishes to a standard topic (no deduplication) stay counted by calls.
TOPIC_PUBLISHES = ("sns:Publish", "sns:PublishBatch")


def per_upload(runtime: Any, uploads: Sequence[tuple[Any, dict[str, Any], int]],
                counted: dict[str, int]) -> list[dict[str, int]]:
    """Each upload's charges and named effects (not the queue sends: those are counted where the
    queue delivers them, for the schedule as a whole): what the invocations of its event did.
    A charge landed at the provider that no upload's invocation asked for (made outside any
    invocation) is put on the first upload: never fewer charges than landed."""
    works = [work_of(event) for _, event, _ in uploads]
    per = [{CHARGES: runtime.provider.made_for[work]} for work in works]
    for (name, work), n in runtime.watch.effect_counts.items():
        if name not in QUEUE_SENDS and work in works:
            per[works.index(work)][name] = per[works.index(work)].get(name, 0) + n
    per[0][CHARGES] += max(0, counted.get(CHARGES, 0) - sum(p[CHARGES] for p in per))
    return per


def per_order(per_upload: Sequence[dict[str, int]], dlqs: Sequence[int],
               orders: Sequence[int]) -> tuple[list[dict[str, int]], list[int]]:
    """The uploads' counts and failure-queue messages summed per order (docs/one_charge_per_order.md: one charge per
    order, so an uploader's retried PUT adds nothing to what its order should get)."""
    names = list(dict.fromkeys(orders))
    per: list[dict[str, int]] = [{} for _ in names]
    failed = [0] * len(names)
    for counts, dlq, order in zip(per_upload, dlqs, orders):
        i = names.index(order)
        failed[i] += dlq
        for name, n in counts.items():
            per[i][name] = per[i].get(name, 0) + n
    return per, failed


def judge_sqs(world: Any, runtime: Any, schedule: Schedule, uploads: Sequence[Any], counted: dict[str, int],
               baseline: dict[str, int], table: str | None, books: Books | None, charges_seen: set[str],
               lines_seen: set[str], recorded: Sequence[tuple[str, dict[str, Any]]],
               own_keys: Iterable[str] = ()) -> Result:
    """One SQS schedule's result: its batch's uploads judged one by one (`triggers.judge_batch`).
    `recorded`: every charge at the provider (`LocalWorld.provider_charges`), read once by the caller.
    `own_keys`: objects the function wrote where its trigger listens (P23): a failed message about one
    is no upload's failure."""
    charges, unowned, owner_of = triggers.charges_by_upload(recorded, uploads, charges_seen)
    counted[CHARGES] = sum(charges) + unowned
    lines, unowned_lines = [0] * len(uploads), 0
    if table and books:
        lines, unowned_lines = triggers.lines_by_upload(world, table, books.attribute, owner_of, uploads,
                                                        lines_seen)
        counted[LINES] = sum(lines) + unowned_lines
    dlq = triggers.failures_by_upload(drain(world, world.queue_url), uploads, own_keys)
    # behind an SNS topic (its envelope: docs/check_from_a_template.md, P24), a clean run that took the payment
    # client and charged nothing lost its orders; elsewhere it stays "made no charge" (exit 2), as before
    topic = getattr(runtime, "topic", None)
    enveloped = topic is not None and not topic.raw_message_delivery
    # with the uploader's retried PUT, a name's charges are its order's (docs/one_charge_per_order.md)
    verdict, findings = triggers.judge_batch(uploads, charges, unowned, lines, unowned_lines, dlq, counted,
                                             baseline, runtime.provider.declined, "order" if schedule.overwrite
                                             or schedule.later else "upload", len(triggers.SQS_BATCH),
                                             enveloped and getattr(runtime, "provider_built", False))
    if enveloped and not baseline and verdict == Verdict.SILENT_LOSS.value \
            and findings[0].startswith("the clean run charged none"):  # what it printed, and what it was given
        logs = [line[:200] for a in runtime.attempts for line in a.logs][-2:]
        findings[0] += ((f" (its last log lines: {'; '.join(logs)})" if logs else "")
                        + f"; each body is SNS's envelope from topic {topic.name}, S3's event the string in its "
                          "Message (docs/check_from_a_template.md, P24)")
    return Result(schedule, counted, sum(dlq), verdict, runtime.attempts, findings)
