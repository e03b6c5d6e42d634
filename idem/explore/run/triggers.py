"""`idem check --trigger`: how each trigger hands the check's uploads to the function, and, for
SQS, how a batch of uploads is judged (each upload on its own: money where it landed).

- s3 (the default) and eventbridge: one upload per schedule, invoked asynchronously; a schedule's
  `duplicate` and `concurrent` copies are S3's or EventBridge's at-least-once copies
  (see `idem.sim.triggers`).
- sqs: two uploads per schedule, two messages in one batch, so that what a batch does to its
  neighbours shows (a whole batch retried, a failure reported as a success). The schedule's
  retries r are the redrive policy's maxReceiveCount r + 1 (each message handled at most r + 1
  times, then moved to the dead-letter queue, which is the failure queue); `duplicate` is SQS
  delivering every message again after the first batch, `concurrent` a copy of the batch
  received while the first invocation sits at a boundary. Two schedules add the uploader's
  retried PUT of the first order (a new version, the same bytes): one more message, after the
  first batch's or in it; its charges count for the first order (the same name).
"""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Callable, Iterable, Sequence

from ...core.events import S3Object, encode_key
from ...sim.runtime import LocalLambda
from ...sim.world import pk_text
from ...sim.triggers import TRIGGERS, SqsFedLambda, SqsMapping, eventbridge_event
from ..families.timings import seconds, visibility_range, visibility_timeout
from ..judge.verdicts import BOOKS, BREAKS, MONEY, Verdict, judge_upload

#: The SQS schedules' batch: the checked upload and a neighbour, one message each (file names in
#: the schedule's folder: see `object_name`). Plain names, the same URL-encoded: names that need
#: decoding are a family of their own (`idem.explore.families.key_decoding`).
SQS_BATCH = ("order-1.json", "order-2.json")
#: S3's longest object name: 1,024 bytes of UTF-8
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
MAX_NAME_BYTES = 1024
#: Verdicts from the worst to the best: a batch's verdict is its worst upload's.
SEVERITY = tuple(v.value for v in (Verdict.DOUBLE_CHARGE, Verdict.DOUBLE_EFFECT, Verdict.SILENT_LOSS,
                                   Verdict.SILENT_MISMATCH, Verdict.NEEDS_ATTENTION, Verdict.FAILED_VISIBLY,
                                   Verdict.DECLINED, Verdict.EXACTLY_ONCE))


def check_trigger(trigger: str) -> str:
    if trigger not in TRIGGERS:
        raise ValueError(f"--trigger {trigger!r}: choose one of {', '.join(TRIGGERS)}")
    return trigger


def describe(trigger: str, deployed: Any = None) -> str:
    """One line for the report: what feeds the function (its settings as deployed, when a
    template gave them, are the header's next line: `Deployed.describe`)."""
    if trigger == "sqs" and deployed is not None:
        return f"trigger: sqs (a batch of {len(SQS_BATCH)} messages, then the dead-letter queue)"
    if trigger == "sqs":
        low, high = visibility_range()
        return (f"trigger: sqs (a batch of {len(SQS_BATCH)} messages, BatchSize 10, ReportBatchItemFailures on, "
                f"visibility timeout drawn from {seconds(low)} (the function's timeout) to {seconds(high)}, "
                "maxReceiveCount = retries + 1, then the dead-letter queue)")
    if trigger == "eventbridge":
        return "trigger: eventbridge (S3 Object Created events, invoked asynchronously)"
    return "trigger: s3 (S3 event notifications, invoked asynchronously)"


def sqs_runtime(world: Any, env: dict[str, str], schedule: Any, handler: str, provider_factory: str,
                seed: int | None = None, deployed: Any = None) -> LocalLambda:
    """The local Lambda fed by an SQS event source mapping whose maxReceiveCount is retries + 1,
    or, with `deployed` (`idem.explore.target.deployed.Deployed`), the template's mapping and queue.
    `seed`: its request ids (LocalLambda)."""
    timing = getattr(schedule, "timing", None)
    if deployed is not None:
        mapping = (deployed.sqs_mapping(schedule.retries) if deployed.queue  # the template's queue, as deployed
                   else SqsMapping(visibility_timeout=visibility_timeout(timing, float(deployed.timeout)),
                                   max_receive_count=schedule.retries + 1))
        return SqsFedLambda(world, env, mapping=mapping, fault=schedule.fault,
                            retries=schedule.retries, handler=handler, provider_factory=provider_factory,
                            seed=seed, topic=deployed.sns_feed(), **deployed.runtime_options())
    # the visibility timeout drawn from its range, each end a schedule of its own (idem.explore.families.sqs_timed)
    visibility = visibility_timeout(timing)
    return SqsFedLambda(world, env, mapping=SqsMapping(visibility_timeout=visibility,
                                                       max_receive_count=schedule.retries + 1),
                        fault=schedule.fault, retries=schedule.retries, handler=handler,
                        provider_factory=provider_factory, seed=seed)


def object_name(number: int, name: str = SQS_BATCH[0], longest: bool = False) -> str:
    """The name of a schedule's upload: its own folder, then a plain file name (the family `names`
    gives one that needs URL-decoding: `idem.explore.families.key_decoding`). `longest`: padded to S3's
    limit, 1,024 bytes of UTF-8, so a name cut to fit a 255-character idempotency key (instead of
    hashed) loses what tells two uploads apart."""
    folder = f"check{number:05d}/"
    if not longest:
        return folder + name
    stem, suffix = name.rsplit(".", 1)
    room = MAX_NAME_BYTES - len(folder.encode()) - len(suffix.encode()) - 1
    filler = (stem + "-") * (room // (len(stem) + 1) + 1)
    padded = filler.encode()[:room].decode("utf-8", "ignore")  # never half a character
    padded += "x" * (room - len(padded.encode()))
    return f"{folder}{padded}.{suffix}"


def name_for(number: int, schedule: Any) -> str:
    """The name of schedule `number`'s upload: `object_name`, as its family asks."""
    return object_name(number, getattr(schedule, "name", "") or SQS_BATCH[0], longest=schedule.long_name)


def neighbours(trigger: str, world: Any, number: int, body: Any = None) -> list[S3Object]:
    """The uploads a schedule delivers besides the checked one: SQS's batch neighbour."""
    if trigger != "sqs":
        return []
    return [world.upload(object_name(number, name), body(number, n) if body else b"order")
            for n, name in enumerate(SQS_BATCH[1:], start=2)]


def request_of(world: Any, obj: S3Object) -> tuple[str, str]:
    """The S3 request that created `obj`: its x-amz-request-id (16 upper-case hex digits) and its
    x-amz-id-2 (the host id), one pair per PUT and the same in every copy of its event. S3 sends
    them in each record's responseElements
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html);
    EventBridge's Object Created carries the request id as detail.request-id
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html). Derived from the
    upload's own facts (its world, name, version and sequencer): new for each PUT, the same every run."""
    seed = hashlib.sha256(f"{getattr(world, 'prefix', '')}\n{obj.key}\n{obj.version_id}\n{obj.sequencer}".encode()).digest()
    request_id = seed[:8].hex().upper()
    host_id = base64.b64encode(hashlib.sha512(seed).digest()[:57]).decode()  # 76 characters, as S3's are
    return request_id, host_id


def event_for(trigger: str, world: Any, obj: S3Object) -> dict[str, Any]:
    """The event an asynchronous trigger delivers for `obj`: S3's notification or EventBridge's,
    each with the request that created the object (`request_of`)."""
    request_id, host_id = request_of(world, obj)
    if trigger == "eventbridge":
        return eventbridge_event(obj, request_id=request_id)
    event = world.event(obj)
    for record in event["Records"]:
        record["responseElements"] = {"x-amz-request-id": request_id, "x-amz-id-2": host_id}
    return event


def sqs_body(runtime: Any, world: Any, obj: S3Object) -> str:
    """The SQS message body for `obj`'s upload: S3's event as JSON text, or, where the queue is fed
    through an SNS topic the bucket notifies (`runtime.topic`), SNS's envelope around it, published
    now (docs/check_from_a_template.md, P24)."""
    event = json.dumps(event_for("s3", world, obj))
    topic = getattr(runtime, "topic", None)
    return topic.body(event, f"{obj.uri}#{obj.sequencer}", world.clock.now()) if topic is not None else event


def key_forms(key: str) -> tuple[str, ...]:
    """How an object's name can appear in a message about it: plain, URL-encoded as S3's event has
    it, and either one inside JSON text (non-ASCII escaped, as json.dumps writes it), once or twice
    (S3's event as the string in SNS's envelope: `sqs_body`)."""
    forms = (key, encode_key(key))
    once = tuple(json.dumps(f)[1:-1] for f in forms)
    return tuple(dict.fromkeys(forms + once + tuple(json.dumps(f)[1:-1] for f in once)))


def deliver_sqs(runtime: Any, world: Any, uploads: Sequence[S3Object], schedule: Any,
                again: Callable[[], S3Object] | None = None) -> list[S3Object]:
    """Each upload's S3 event as one message of the source queue, with the schedule's copies, and
    runs them all; returns the uploads to judge. `again` (a schedule with `overwrite`): makes the
    second upload of the first name, whose event S3 sends as one more message: in the same batch
    (`same_batch`), or 5 s after the first batch's messages are done. (The families of time and
    accounts: `idem.explore.families.sqs_timed.deliver`.)"""
    for obj in uploads:
        runtime.send_message(sqs_body(runtime, world, obj))
    if again is not None and schedule.delivery == "same_batch":
        runtime.send_message(sqs_body(runtime, world, again()))
    if getattr(schedule, "sent_twice", False):
        # S3 delivers a notification at least once: the same event, sent to the queue again, is a
        # second message with its own message id (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html: "designed to be delivered at least once")
        runtime.send_message(sqs_body(runtime, world, uploads[0]))
    if schedule.delivery == "duplicate":
        runtime.copy_messages(at=5.0)
    elif schedule.delivery == "concurrent":
        runtime.during(schedule.copy_at, runtime.receive_copy_now)
    runtime.run()
    if again is not None and schedule.delivery != "same_batch":
        world.clock.advance(5.0)
        runtime.send_message(sqs_body(runtime, world, again()))
        runtime.run()
    return list(uploads)


# -- judging a batch: each upload's money where it landed ------------------------------------------
def items_with(world: Any, table: str, attribute: str, seen: set[str]) -> list[dict[str, Any]]:
    """Every item of `table` that has `attribute`, read from the table itself (`table_items`),
    but those whose `pk` is in `seen`."""
    return [item for item in world.table_items(table, leave_out=seen) if attribute in item]


def _owner(text: str, uploads: Sequence[S3Object]) -> int | None:
    """Which upload a reference names (its key, plain or URL-encoded), if exactly one does."""
    named = [n for n, obj in enumerate(uploads) if any(form in text for form in key_forms(obj.key))]
    return named[0] if len(named) == 1 else None


def charges_by_upload(recorded: Sequence[tuple[str, dict[str, Any]]], uploads: Sequence[S3Object],
                      seen: set[str]) -> tuple[list[int], int, dict[str, int]]:
    """New charges in the provider's own record (`LocalWorld.provider_charges`), per upload by their
    reference; those that name no upload; and which upload each charge id belongs to. `seen` grows
    by the new ones."""
    per, unowned, owner_of = [0] * len(uploads), 0, {}
    for where, item in recorded:
        if where in seen:
            continue
        seen.add(where)
        charge_id = str(item["pk"]).removeprefix("charge#")
        owner = _owner(str(item.get("reference", "")), uploads)
        if owner is None:
            unowned += 1
        else:
            per[owner] += 1
            owner_of[charge_id] = owner
    return per, unowned, owner_of


def lines_by_upload(world: Any, table: str, attribute: str, owner_of: dict[str, int],
                    uploads: Sequence[S3Object], seen: set[str]) -> tuple[list[int], int]:
    """New ledger lines per upload, by the charge id they carry; and those that carry an id no
    charge of this batch has (then the books are weighed for the batch as a whole)."""
    from ..judge.books import lines  # per charge: a done record keeping the charge id is no second line

    per, unowned = [0] * len(uploads), 0
    found = items_with(world, table, attribute, seen)
    seen |= {pk_text(item["pk"]) for item in found}
    counted = set(lines(found, attribute))
    for item in (i for i in found if pk_text(i["pk"]) in counted):
        value = next(iter(item[attribute].values()))
        owner = owner_of.get(str(value))
        if owner is None:
            unowned += 1
        else:
            per[owner] += 1
    return per, unowned


def failures_by_upload(messages: Sequence[dict[str, Any]], uploads: Sequence[S3Object],
                       own_keys: Iterable[str] = ()) -> list[int]:
    """The failure queue's messages about each upload (the dead-letter queue's body is S3's event);
    one about an object the function wrote itself (`own_keys`, P23) is none of theirs."""
    per = [0] * len(uploads)
    own = [form for key in own_keys for form in key_forms(key)]
    for message in messages:
        if any(form in message["Body"] for form in own):
            continue
        owner = _owner(message["Body"], uploads)
        if owner is not None:
            per[owner] += 1
    return per


def judge_batch(uploads: Sequence[S3Object], charges: list[int], unowned_charges: int, lines: list[int],
                unowned_lines: int, dlq: list[int], effects: dict[str, int], baseline: dict[str, int],
                declined: list[str], unit: str = "upload", clean_uploads: int = 0,
                built_provider: bool = False) -> tuple[str, list[str]]:
    """The batch's verdict: each upload judged on its own money (and books, where each line names
    its charge), named effects and unattributed books for the batch; the worst verdict wins.
    `unit` "order": a name's counts are its order's (the uploader's retried PUT of it included).
    `clean_uploads`: how many uploads the clean run's batch had (another account's order adds one
    upload to a schedule's batch, which must get what one upload of the clean run got).
    `built_provider`: the handler built its payment client with the check's stand-in (make_provider), and
    a clean run that charged nothing with it lost its batch (`judge.effects.judge_sqs` says when)."""
    n = clean_uploads or len(uploads)
    if not baseline and built_provider and not any(charges) and not unowned_charges and not any(dlq) \
            and not declined and not any(effects.values()):
        # the clean run: the handler took the payment client, charged no upload and returned, and SQS
        # deleted every message, nothing in the dead-letter queue: each order is gone
        return Verdict.SILENT_LOSS.value, [
            f"the clean run charged none of the batch's {len(uploads)} uploads: the handler built its payment "
            "client (make_provider) and returned, so SQS deleted every message, with nothing in the "
            "dead-letter queue"]
    if not baseline:  # the clean run: only say what cannot be attributed
        charged = {obj.key.rsplit("/", 1)[0] for obj, got in zip(uploads, charges) if got}
        # an upload of the same folder as one charged, with no charge and nothing in the dead-letter
        # queue (a handler may skip a file outside its own folder on purpose: then it is only said)
        lost = [obj for obj, got, failed in zip(uploads, charges, dlq)
                if not got and not failed and obj.key.rsplit("/", 1)[0] in charged]
        if not unowned_charges and lost:  # every charge names its upload: these got none
            return Verdict.SILENT_LOSS.value, [
                f"the clean run charged {sum(charges)} of the batch's {len(uploads)} uploads and not "
                f"{_shown(lost[0], uploads)}, whose message is gone with nothing in the dead-letter queue "
                "(each charge names its own upload: it is no question of references)"]
        wrong = []
        if unowned_charges or len(set(charges)) > 1:
            wrong.append(f"the clean run's charges per upload are {charges} with {unowned_charges} naming no "
                         "upload: the check judges each message's upload by the charge's reference, which "
                         "must contain the object's key")
        return Verdict.EXACTLY_ONCE.value, wrong
    money, books = baseline.get(MONEY, 0) // n, baseline.get(BOOKS, 0) // n
    verdicts, findings = [], []
    for i, obj in enumerate(uploads):
        counted, wanted = {MONEY: charges[i]}, {MONEY: money}
        if books and not unowned_lines:
            counted[BOOKS], wanted[BOOKS] = lines[i], books
        was_declined = any(_owner(ref, uploads) == i for ref in declined)
        verdict, wrong = judge_upload(counted, wanted, dlq[i], declined=was_declined)
        verdicts.append(verdict)
        findings += [f"{_shown(obj, uploads)}: {w.replace('the upload', f'the {unit}').replace('one upload', f'one {unit}')}"
                     for w in wrong]
    if unowned_charges:
        verdicts.append(Verdict.DOUBLE_CHARGE.value)
        findings.append(f"{unowned_charges} charge(s) whose reference names no upload of the batch")
    alerted = any(dlq)
    if books and unowned_lines:  # lines that name no charge of the batch: weigh the batch's books
        per_charge = baseline[BOOKS] / max(1, baseline.get(MONEY, 0))
        got, want = sum(lines) + unowned_lines, sum(charges) * per_charge
        if got != want:
            findings.append(f"the batch: {got} ledger lines for {sum(charges)} charges")
            verdicts.append((Verdict.NEEDS_ATTENTION if alerted else Verdict.SILENT_MISMATCH).value)
    for name, want in baseline.items():  # named effects: counted for the batch as a whole
        got = effects.get(name, 0)
        if name in (MONEY, BOOKS) or got == want or (got < want and not sum(charges) and alerted):
            continue
        findings.append(f"the batch: {name} {got} times (clean run {want})")
        verdicts.append(Verdict.DOUBLE_EFFECT.value if got > want else
                        (Verdict.NEEDS_ATTENTION if alerted else Verdict.SILENT_MISMATCH).value)
    worst = min(verdicts, key=SEVERITY.index)
    return worst, findings


def _shown(obj: S3Object, uploads: Sequence[S3Object]) -> str:
    """An upload's file name in a finding, or its whole key where another account's upload has
    the same file name (`idem.explore.families.sqs_timed`'s accounts family)."""
    name = obj.key.rsplit("/", 1)[-1]
    return obj.key if sum(o.key.rsplit("/", 1)[-1] == name for o in {o.key: o for o in uploads}.values()) > 1 else name


def breaks(verdict: str) -> bool:
    return verdict in BREAKS
