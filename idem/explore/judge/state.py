"""Effects judged by what they leave: the state rule of `idem check`.

A write is not a message. Writing the item for `file_name` twice with the same content leaves the
table as one write does (DynamoDB's PutItem replaces an item with the same key:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html; S3's PutObject
replaces an object with the same key:
https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html). A message, an email or a job
(sns Publish, ses/sesv2 Send*, sqs SendMessage, events PutEvents, states StartExecution, ...) is
another one each time it is sent. So the check counts the second kind and compares the first:

- **which writes** (`STATE_CALLS`): dynamodb PutItem, UpdateItem, DeleteItem, BatchWriteItem,
  TransactWriteItems; s3 PutObject (boto3's transfer manager's included), CopyObject,
  CompleteMultipartUpload, DeleteObject. Only those named with `--effect` are judged so; every
  other named effect is counted, as before.
- **what is read back**: after each schedule, the items and objects its succeeded write calls
  touched (`idem.sim.writes`), and nothing else: only the tables and buckets the handler wrote,
  and in them only the keys it wrote. An item by its table's key, with its content; an object by
  its bucket and key, with its bytes; an item or object that is gone, as gone.
- **what is the same**: every string is read with the schedule's own names replaced by
  placeholders (each upload's name, and its name without its extension; its folder
  `checkNNNNN`; its order id's number; its world's bucket; each upload's eTag, sequencer and
  version id), so the clean run's item for `check99999/a.json` and a schedule's for
  `check00042/a.json` compare equal. The clean run runs twice more (two numbers, one after the
  other in one world, so other invocation ids, uploads and sequencers, the second a day and a
  second and a half later on the virtual clock): a field whose value still differs between the
  two (a uuid, a time, a request id) is left out of every comparison, in that table; an object
  whose bytes differ is compared by its key only; an item whose key differs (a uuid key) is
  compared by its content only (as many such items as the clean run left).
- **what cannot be compared**: an item or object at a key every run shares (no name of the run's
  own in it: a running total at `pk = "total"`) whose content differs between the two clean runs
  has no clean state to compare with; that effect is counted by its calls, as a message is.
  So is an update (UpdateItem, TransactWriteItems) in a schedule with two uploads at one name
  (two orders, or an order's retried PUT): it may add to what the first left (a running total
  per customer), which replacing one upload's clean state by the other's cannot predict.
- **what is expected**: the clean run's state, once per ORDER the schedule uploaded, in upload
  order: a second order's state is the clean run's with its order id (`-NNNNN-2`), and at one key
  the later order's state replaces the earlier one (an uploader's retried PUT is the same order:
  its state once).
- **the verdict**: a schedule whose state equals the expected state, and whose counted effects
  equal the clean run's, holds. More items or objects than expected is a `double_effect` (a
  second job item). Nothing written is a loss (`silent_loss`, or `failed_visibly` with the
  failure queue). Anything else is a break named in the findings: an item or object with other
  content than expected (an overwrite with different content, a stale write of an older order
  last) is a `double_effect` when the schedule wrote more often than the clean run did for its
  orders and the content found is none the schedule expects (a second application: a total read,
  added to and put back), else a `silent_mismatch` (`needs_attention` when the failure queue holds
  the event): another order's content at an order's key is wrong content, however often it was
  written (a retry that copied the name's newest version again).
- **a declared ordering rule** (`--ordering sequencer`): the handler keeps, per object name, the
  upload with the greatest S3 sequencer and skips an older one on purpose
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html:
  for one key, the greater sequencer is the later event). Then an order whose upload has a newer
  upload of the same name may have no write of its own; the final state must still be the newest
  upload's. Without it, every order must write.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterable, Sequence

from ...sim.runtime import work_of
from ...sim.writes import STATE_CALLS, writes_of
from ..families import key_decoding
from ..run.triggers import key_forms
from .verdicts import Verdict

#: The ordering rules a handler can declare (`--ordering`).
ORDERINGS = ("none", "sequencer")
_TYPES = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}


def state_effects(effects: Iterable[str]) -> tuple[str, ...]:
    """The named effects judged by the state they leave."""
    return tuple(e for e in effects if e in STATE_CALLS)


# -- reading what the writes left -----------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A DynamoDB value as plain data, whether typed ({"S": "x"}) or as boto3's resource gives it."""
    from boto3.dynamodb.types import TypeDeserializer

    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPES:
        try:
            return _plain(TypeDeserializer().deserialize(value))
        except (TypeError, ValueError, AttributeError):
            pass
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if hasattr(value, "value") and type(value).__name__ == "Binary":
        return bytes(value.value).decode("utf-8", "replace")
    return value


class Names:
    """A schedule's own names, and the placeholders they are read as (see the module)."""

    def __init__(self, number: int, uploads: Sequence[Any] = (), bucket: str = "", trigger: str = "s3") -> None:
        # another account's folder (idem.explore.families.accounts) is a name of its own, so its upload's state
        # is expected beside the first's (`CleanState.expected`, renamed), not folded into it; under
        # SQS, whose state is judged as one batch's, it reads as the first account's folder
        other = "check#####" if trigger == "sqs" else "other#####"
        pairs = [(f"check{number:05d}", "check#####"), (f"-{number:05d}", "-#####"), (f"other{number:05d}", other)]
        pairs += _exact_account()
        if bucket:
            pairs.append((bucket, "<bucket>"))
        keys = list(dict.fromkeys(getattr(obj, "key", "") for obj in uploads))
        renamed = key_decoding.plain_name(keys[0], _current_object()) if keys and keys[0] else None
        if renamed:  # the family names: its file name, read as the clean run's (as decoded or as S3 sent it)
            name, plain = renamed
            for form in key_forms(name):
                pairs += [(form, plain), (form.rsplit(".", 1)[0], plain.rsplit(".", 1)[0])]
        for n, key in enumerate(keys, start=1):  # an upload's own name (S3's longest among them)
            # as the function may store it: decoded, or as S3's event carries it (URL-encoded), or
            # either inside JSON text (triggers.key_forms)
            for form in (key_forms(key) if key else ()):
                pairs += [(form, f"<key{n}>"), (form.rsplit(".", 1)[0], f"<key{n}-stem>")]
        for obj in uploads:
            for attribute, mark in (("sequencer", "<sequencer>"), ("etag", "<etag>"), ("version_id", "<version>")):
                value = getattr(obj, attribute, None)
                if value and len(str(value)) > 4:
                    pairs += [(str(value), mark), (str(value).upper(), mark)]
        self.pairs = sorted(dict(pairs).items(), key=lambda p: -len(p[0]))  # longest first

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            for real, mark in self.pairs:
                if real in value:
                    value = value.replace(real, mark)
            return value
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value


@dataclass(frozen=True)
class Found:
    """One item or object a write touched, as it is now: `key` and `content` plain and named."""

    effect: str
    kind: str  # "table" or "bucket"
    resource: str
    key: Any  # the item's key attributes (a dict), or the object's key
    content: Any  # the item (a dict), the object's text, or None: gone


def read(world: Any, watch: Any, effects: Sequence[str], names: Names) -> list[Found]:
    """What the schedule's succeeded writes of `effects` left, each item or object once."""
    from moto.dynamodb.models import dynamodb_backends

    from ...sim.world import ACCOUNT, REGION

    wanted = set(effects)
    touched: dict[tuple[str, str, str, str], tuple[str, str, str, Any]] = {}
    for name, _work, targets in writes_of(watch):
        if name not in wanted:
            continue
        for kind, resource, what in targets:
            touched.setdefault((name, kind, resource, json.dumps(_plain(what), sort_keys=True, default=str)),
                               (name, kind, resource, what))
    found: list[Found] = []
    tables: dict[str, tuple[list[str], dict[str, dict[str, Any]]]] = {}
    for name, kind, resource, what in touched.values():
        if kind == "bucket":
            try:
                body = world.s3.get_object(Bucket=resource, Key=what)["Body"].read()
                content: Any = body.decode("utf-8", "replace")
            except Exception:  # noqa: BLE001 (gone: NoSuchKey)
                content = None
            found.append(Found(name, kind, resource, names(what), names(content)))
            continue
        if resource not in tables:
            try:
                table = dynamodb_backends[ACCOUNT][REGION].get_table(resource)
            except Exception:  # noqa: BLE001 (a table that does not exist: nothing landed)
                tables[resource] = ([], {})
            else:
                attrs = [a for a in (table.hash_key_attr, table.range_key_attr) if a]
                items = [_plain(item.to_json()["Attributes"]) for item in table.all_items()]
                tables[resource] = (attrs, {_key_json(i, attrs): i for i in items})
        attrs, index = tables[resource]
        key = {a: _plain(what).get(a) for a in attrs}
        item = index.get(_key_json(key, attrs))
        found.append(Found(name, kind, resource, names(key), names(item)))
    unique = {(f.effect, f.kind, f.resource, _dump(f.key)): f for f in found}
    return [unique[k] for k in sorted(unique)]


#: The placeholders of a run's own names (`Names`).
_OWN = ("check#####", "other#####", "-#####", "<key", "<bucket>", "<sequencer>", "<etag>", "<version>")


def _current_object() -> Any:
    """The --object the check's uploads are (`objects.CURRENT`), or None."""
    from ..run import objects

    return objects.CURRENT


def _exact_account() -> list[tuple[str, str]]:
    """With --object FILE=KEY whose KEY has an account folder (`object_schedules.account_folder`):
    that folder, read as the check's own account folder is (`check#####/`), so another account's
    upload is expected under its own folder in its place."""
    from ..run import objects, uploads
    from ..families.object_schedules import account_folder

    obj = objects.CURRENT
    folder = account_folder(obj.key, uploads.KEY_PREFIX) if obj is not None and obj.exact else ""
    return [(f"{folder}/", "check#####/")] if folder else []


def _own(key: Any) -> bool:
    """Whether a key names something of the run's own (its upload, its order): not shared by every run."""
    text = _dump(key)
    return any(mark in text for mark in _OWN)


def _key_json(item: dict[str, Any], attrs: Sequence[str]) -> str:
    return json.dumps([item.get(a) for a in attrs], default=str)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# -- the clean run's state, and what differs between two clean runs ---------------------------------
@dataclass(frozen=True)
class CleanState:
    """The clean run's state for each judged effect, with what two clean runs disagree on left out."""

    found: tuple[Found, ...] = ()
    #: (kind, resource) -> fields of its items that differ between two clean runs ("*": an object's bytes)
    volatile: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    #: (kind, resource) whose key differs between two clean runs: compared by content only
    keyless: frozenset[tuple[str, str]] = frozenset()
    ordering: str = "none"  # the handler's declared ordering rule (ORDERINGS)
    #: effects counted by their calls after all: an item or object at a key every run shares (no
    #: name of the run's own in it) whose content differs between two clean runs (a running total)
    counted: frozenset[str] = frozenset()

    def by_state(self, effects: Iterable[str]) -> tuple[str, ...]:
        """The named writes judged by their state (the others are counted)."""
        return tuple(e for e in state_effects(effects) if e not in self.counted)

    @classmethod
    def of(cls, first: Sequence[Found], second: Sequence[Found]) -> "CleanState":
        volatile: dict[tuple[str, str], set[str]] = {}
        keyless: set[tuple[str, str]] = set()
        groups = {(f.kind, f.resource) for f in [*first, *second]}
        for group in groups:
            a = sorted((f for f in first if (f.kind, f.resource) == group), key=lambda f: _dump(f.content))
            b = sorted((f for f in second if (f.kind, f.resource) == group), key=lambda f: _dump(f.content))
            fields: set[str] = set()
            for x, y in zip(a, b):
                if x.key != y.key:
                    keyless.add(group)
                if isinstance(x.content, dict) and isinstance(y.content, dict):
                    fields |= {k for k in set(x.content) | set(y.content) if x.content.get(k) != y.content.get(k)}
                elif x.content != y.content:
                    fields.add("*")
            if len(a) != len(b):
                keyless.add(group)
            volatile[group] = fields
        counted = {f.effect for f in first if (f.kind, f.resource) not in keyless
                   and volatile.get((f.kind, f.resource)) and not _own(f.key)}
        return cls(tuple(first), {g: frozenset(v) for g, v in volatile.items()}, frozenset(keyless),
                   counted=frozenset(counted))

    def entry(self, f: Found) -> tuple[tuple[Any, ...], str]:
        """An item or object as compared: (where and its key, or None for a keyless one), its content."""
        group = (f.kind, f.resource)
        gone = self.volatile.get(group, frozenset())
        if isinstance(f.content, dict):
            content = _dump({k: v for k, v in f.content.items() if k not in gone})
        else:
            content = "<bytes that differ between clean runs>" if "*" in gone and f.content is not None \
                else _dump(f.content)
        key = None if group in self.keyless else _dump(f.key)
        return (f.effect, f.kind, f.resource, key), content

    def expected(self, orders: Sequence[int] = (1,), renamed: bool = False) -> Counter[tuple[Any, ...]]:
        """The state a correct handler leaves for these orders, in upload order (see the module).
        `renamed`: each order is an upload of its own name (another account's), not one name's."""
        keyed: dict[tuple[Any, ...], str] = {}
        loose: Counter[tuple[Any, ...]] = Counter()
        for order in dict.fromkeys(orders):
            for f in self.found:
                where, content = self.entry(f)
                if order > 1 and renamed:  # the clean run's entries, under the n-th upload's name and account
                    where = tuple(w.replace("<key1", f"<key{order}").replace("check#####", "other#####")
                                  if isinstance(w, str) else w for w in where)
                    content = content.replace("<key1", f"<key{order}").replace("check#####", "other#####")
                elif order > 1:  # its own order id, in its content and in its key (ledger/ORDER_ID.json)
                    content = content.replace("-#####", f"-#####-{order}")
                    if where[3] is not None:
                        where = (*where[:3], where[3].replace("-#####", f"-#####-{order}"))
                if where[3] is None:
                    loose[(*where, content)] += 1
                else:
                    keyed[where] = content
        return loose + Counter((*where, content) for where, content in keyed.items())

    def got(self, found: Sequence[Found]) -> Counter[tuple[Any, ...]]:
        return Counter((*self.entry(f)[0], self.entry(f)[1]) for f in found)


# -- the verdict --------------------------------------------------------------------------------------
@dataclass
class StateJudgement:
    """How a schedule's state compares with the expected one, per judged effect."""

    counts: dict[str, int]  # each state-judged effect's count for the verdict rules (see `judge`)
    findings: list[str]
    mismatch: bool  # content differs from what was expected (not only more, or nothing)
    #: every content that differs is one the schedule expects elsewhere: another order's state at this
    #: key (one order's bytes under another's key, a stale write of an older order last), so what is
    #: wrong is where it landed, however often the schedule wrote
    misplaced: bool = False


#: Writes that can add to an item rather than replace it (an UpdateItem's ADD or SET x = x + n).
UPDATES = ("dynamodb:UpdateItem", "dynamodb:TransactWriteItems")


def judge(clean: CleanState, found: Sequence[Found], effects: Sequence[str], baseline: dict[str, int],
          calls: dict[str, int], orders: Sequence[int] = (1,), renamed: bool = False) -> StateJudgement:
    """Each judged effect's count as the verdict rules read it: the clean run's when the state is
    the expected one; more by each item or object too many; 0 when nothing was written; and
    `mismatch` with the difference named otherwise."""
    want_all, got_all = clean.expected(orders, renamed), clean.got(found)
    counts: dict[str, int] = {}
    findings: list[str] = []
    mismatch, misplaced = False, True
    # Two uploads at one name (two orders, or one order's retried PUT): an update may add to what
    # the first left (a running total per customer), which no clean run of one upload shows; such
    # writes are judged by their calls.
    accumulating = len(orders) > 1
    for name in effects:
        if name in clean.counted or (accumulating and name in UPDATES):
            continue  # a shared running total: judged by its calls, as a message is
        want = Counter({k: n for k, n in want_all.items() if k[0] == name})
        got = Counter({k: n for k, n in got_all.items() if k[0] == name})
        wanted = baseline.get(name, 0)
        if got == want:
            counts[name] = wanted
            continue
        extra, missing = got - want, want - got
        things = "objects" if name.startswith("s3:") else "items"
        if not got:
            counts[name] = 0
            continue
        if extra and not missing:
            counts[name] = wanted + sum(extra.values())
            findings.append(f"{name} left {sum(got.values())} {things} where the clean run left "
                            f"{sum(want.values())}: {_show(extra)}")
            continue
        counts[name] = wanted  # the state names what is wrong (`worse`), not the count
        mismatch = True
        misplaced = misplaced and bool(extra) and {k[-1] for k in extra} <= {k[-1] for k in want}
        findings.append(f"{name} left other {things} than the clean run: expected {_show(missing)}, found "
                        f"{_show(extra) if extra else 'nothing there'}")
    return StateJudgement(counts, findings, mismatch, misplaced=mismatch and misplaced)


def _show(entries: Counter[tuple[Any, ...]]) -> str:
    first = next(iter(entries))
    shown = f"{first[2]} {first[3] or ''} {first[4]}".replace("  ", " ")
    return shown[:300] + (f" (and {sum(entries.values()) - 1} more)" if sum(entries.values()) > 1 else "")


def worse(verdict: str, judgement: StateJudgement, dlq: int, calls: dict[str, int],
          baseline: dict[str, int], orders: int = 1) -> str:
    """The verdict once a state that differs from the expected one is weighed: a break (see the
    module), unless the verdict is already a double effect or charge. Other content is a double
    effect when the schedule wrote more often than the clean run did for its `orders` (`calls`: the
    schedule's calls, every upload's summed), unless it is another order's content, misplaced
    (`StateJudgement.misplaced`): then the finding is wrong content, a mismatch."""
    if verdict in (Verdict.DOUBLE_CHARGE.value, Verdict.DOUBLE_EFFECT.value):
        return verdict
    if any(n > baseline.get(name, 0) for name, n in judgement.counts.items()):
        return Verdict.DOUBLE_EFFECT.value  # an item or object too many (a second job)
    if not judgement.mismatch:
        return verdict
    if not judgement.misplaced and any(calls.get(n, 0) > baseline.get(n, 0) * orders for n in judgement.counts):
        return Verdict.DOUBLE_EFFECT.value
    return str((Verdict.NEEDS_ATTENTION if dlq else Verdict.SILENT_MISMATCH).value)


def skipped_by_rule(ordering: str, order_index: int, orders: Sequence[int]) -> bool:
    """Under a declared ordering rule, an order whose upload has a newer upload of the same name
    (every order but the last uploaded) may have no write of its own."""
    return bool(ordering == "sequencer" and orders
                and order_index != list(dict.fromkeys(orders)).index(orders[-1]))


def order_count(judgement: StateJudgement, name: str, calls: int, order_index: int, orders: Sequence[int],
                ordering: str, baseline: dict[str, int]) -> int:
    """One order's count of a write judged by its state, in a schedule of several uploads. With one
    order (its uploads all the same order: a retried PUT, the order uploaded again) the state left is
    that order's alone: its count is the state's, even when no call of it answered success (an SDK
    resend after a lost answer meets its own first write). With several orders the state cannot be
    told apart by order: an order wrote if a call of its uploads did (or the ordering rule let it skip)."""
    if len(set(orders)) == 1 and name in judgement.counts:
        return judgement.counts[name]
    wrote = calls or skipped_by_rule(ordering, order_index, orders)
    return baseline.get(name, 0) if wrote else 0


def landed_for_order(watch: Any, uploads: Sequence[Any], orders: Sequence[int], name: str, index: int) -> bool:
    """Whether a write `name` of the order at `index` (in upload order, as `effects.per_order` sums
    them) landed: noted by a success answer, or by an SDK attempt whose answer was lost
    (`idem.sim.sdk_retries.lose_answers`): the write is in the table even when botocore's resend then
    failed its condition, so the order did write, though no call the handler saw succeeded."""
    names = list(dict.fromkeys(orders))
    works = {work_of(event): names.index(order) for (_, event, _), order in zip(uploads, orders)}
    return any(call == name and works.get(work) == index for call, work, _ in writes_of(watch))
