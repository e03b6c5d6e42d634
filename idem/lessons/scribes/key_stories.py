"""Upload stories pushed through a key recipe: which uploads a recipe tells apart, and the
key traps around it (sequencers, scoped keys, encoded names, key sizes). Chapter 03 shows them.

Each function builds what it needs on moto (a LocalWorld), runs the real idem code and hands
back plain rows; idem.views does the showing.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

from botocore.exceptions import ClientError

from ...core import keys
from ...core.entry import App
from ...core.events import S3Object, newer_sequencer, read_event
from ...core.keys import describe, idempotency_key
from ...sim.runtime import LambdaContext
from ...sim.world import LocalWorld

ORDER = b"sku,qty\nledger,1\n"
#: "Idempotency keys are up to 255 characters long." (https://docs.stripe.com/idempotency)
STRIPE_MAX_KEY_CHARS = 255


OTHER_ORDER = b"sku,qty\nledger,2\n"


@dataclass(frozen=True)
class Upload:
    name: str
    body: bytes = ORDER


@dataclass(frozen=True)
class Delivery:
    """One arrival of an upload's event. `how`: new (its first delivery), retry (Lambda
    runs the same event again after an error) or duplicate (S3 delivers it twice)."""

    upload: int  # 1-based index into the story's uploads
    how: str = "new"


@dataclass(frozen=True)
class Story:
    title: str
    uploads: tuple[Upload, ...]
    deliveries: tuple[Delivery, ...]
    versioned: bool = True
    note: str = ""


_REUPLOAD = (Upload("alice/order.csv"), Upload("alice/order.csv"))


STORIES: dict[str, Story] = {s.title: s for s in (
    Story("retry and duplicate", (Upload("alice/order.csv"),),
          (Delivery(1), Delivery(1, "retry"), Delivery(1, "duplicate")),
          note="one upload; Lambda retries it, then S3 delivers it once more"),
    Story("same bytes again", _REUPLOAD,
          (Delivery(1), Delivery(2), Delivery(2, "duplicate")),
          note="the same file uploaded twice: two uploads, identical bytes"),
    Story("same bytes, versioning off", _REUPLOAD,
          (Delivery(1), Delivery(2), Delivery(2, "duplicate")), versioned=False,
          note="the same two uploads, into a bucket without versioning"),
    Story("out of order", (Upload("alice/order.csv"), Upload("alice/order.csv", OTHER_ORDER)),
          (Delivery(2), Delivery(1), Delivery(1, "duplicate")),
          note="two versions of one name; the second upload's event arrives first"),
)}


@dataclass(frozen=True)
class StoryRow:
    t: float  # seconds on the virtual clock when the event arrived
    arrival: int
    event: str  # which upload, and how it arrived
    version: str
    key: str  # k1, k2, ...: the idempotency keys in order of first appearance
    status: str  # what the handler returned: charged or duplicate
    should: str  # charge (the first arrival of an upload) or skip
    verdict: str  # ok, charged again, upload not charged


@dataclass
class StoryRun:
    story: Story
    recipe: str
    rows: list[StoryRow]
    items: list[dict[str, Any]] = field(default_factory=list)
    charges: int = 0  # as the provider counts them

    @property
    def wanted(self) -> int:
        return len(self.story.uploads)

    @property
    def extra(self) -> int:
        return sum(r.verdict == "charged again" for r in self.rows)

    @property
    def missed(self) -> int:
        return sum(r.verdict == "upload not charged" for r in self.rows)

    def summary(self) -> str:
        if not self.extra and not self.missed:
            return f"{self.charges} charge(s) for {self.wanted} upload(s): right"
        problems = [f"{n} {what}" for n, what in ((self.extra, "extra charge(s)"),
                                                  (self.missed, "upload(s) never charged")) if n]
        return f"{self.charges} charge(s) for {self.wanted} upload(s): {', '.join(problems)}"


RecipeLike = str | Callable[[S3Object], str]


@contextmanager
def registered(recipe: RecipeLike) -> Iterator[str]:
    """A recipe by name, or a function registered for the duration as the recipe `custom`."""
    if isinstance(recipe, str):
        if recipe not in keys.RECIPES:
            raise ValueError(f"unknown key recipe {recipe!r}; choose one of {', '.join(keys.RECIPES)}")
        yield recipe
        return
    if not callable(recipe):
        raise TypeError(f"a recipe is a name or a function S3Object -> str, got {type(recipe).__name__}")
    keys.RECIPES["custom"] = recipe
    try:
        yield "custom"
    finally:
        del keys.RECIPES["custom"]


def demo_app(world: LocalWorld, handler: str, recipe: str) -> App:
    """The entry point's App with any recipe, unsafe ones included. The function itself
    refuses an unsafe KEY_RECIPE at cold start; this demonstration builds its App directly."""
    app = App.from_environment(world.env(handler), session=world.session, clock=world.clock,
                               provider=world.provider(), log=lambda line: None)
    app.services = replace(app.services, recipe=recipe, fallback_unversioned=False)
    return app


def run_story(story: Story | str, recipe: RecipeLike = "version", handler: str = "claim_first",
              gap: float = 10.0) -> StoryRun:
    """Upload the story's objects to a fresh bucket, deliver their events in the story's
    order through the entry point's App (`handler`, keys made by `recipe`) and report
    which arrivals were charged."""
    story = STORIES[story] if isinstance(story, str) else story
    with registered(recipe) as name, LocalWorld(versioned=story.versioned, prefix="story") as world:
        objects = []
        for upload in story.uploads:
            objects.append(world.upload(upload.name, upload.body))
            world.clock.advance(1)
        app = demo_app(world, handler, name)
        labels: dict[str, str] = {}
        seen: set[int] = set()
        rows = []
        for n, delivery in enumerate(story.deliveries, start=1):
            world.clock.advance_to(world.clock.start + gap * n)
            obj = objects[delivery.upload - 1]
            before = {r.key for r in world.ledger().records()}
            context = LambdaContext(f"req-{n}", "idem-charge", world.clock.now() + 30, world.clock)
            status = app.handle(world.event(obj), context)["processed"][0]["status"]
            new = [r.key for r in world.ledger().records() if r.key not in before]
            key = new[0] if new else idempotency_key(obj, name)
            label = labels.setdefault(key, f"k{len(labels) + 1}")
            should = delivery.upload not in seen
            seen.add(delivery.upload)
            rows.append(StoryRow(
                t=round(world.clock.t, 3), arrival=n, event=_event_label(delivery),
                version=(obj.version_id or "null")[:8], key=label, status=status,
                should="charge" if should else "skip",
                verdict=_story_verdict(status == "charged", should)))
        return StoryRun(story, name if isinstance(recipe, str) else "custom", rows,
                        items=world.ledger().items(), charges=len(world.provider().charges()))


def _event_label(delivery: Delivery) -> str:
    what = {"new": "upload", "retry": "Lambda retry of upload",
            "duplicate": "S3 duplicate of upload"}[delivery.how]
    return f"{what} {delivery.upload}"


def _story_verdict(charged: bool, should: bool) -> str:
    if charged == should:
        return "ok"
    return "charged again" if charged else "upload not charged"


def run_grid(recipes: Iterable[RecipeLike] = tuple(keys.RECIPES),
             stories: Iterable[str] = tuple(STORIES)) -> list[StoryRun]:
    """Every story through every recipe."""
    return [run_story(s, r) for r in recipes for s in stories]


@dataclass(frozen=True)
class SequencerRow:
    arrival: int
    object: str
    version: str
    sequencer: str
    order: str  # newest so far, older than the newest, same as the newest


def sequencer_order(arrivals: Iterable[S3Object]) -> list[SequencerRow]:
    """Events in arrival order, each compared with the newest sequencer seen for its key."""
    newest: dict[str, str] = {}
    rows = []
    for n, obj in enumerate(arrivals, start=1):
        latest = newest.get(obj.key)
        if latest is None or newer_sequencer(obj.sequencer, latest):
            newest[obj.key], order = obj.sequencer, "newest so far"
        elif not newer_sequencer(latest, obj.sequencer):  # neither is newer: the same event
            order = "same as the newest"
        else:
            order = "older than the newest"
        rows.append(SequencerRow(n, obj.key, (obj.version_id or "null")[:8], obj.sequencer, order))
    return rows


def naive_newer(a: str, b: str) -> bool:
    """ANTI-PATTERN: compares sequencers as numbers without padding them to one length."""
    return int(a, 16) > int(b, 16)


@dataclass(frozen=True)
class OperationRow:
    operation: str
    key: str
    claimed: bool
    outcome: str


def charge_and_receipt(world: LocalWorld, obj: S3Object, scoped: bool = True) -> list[OperationRow]:
    """One upload, two side effects (a charge, then a receipt), each behind a claim.

    scoped=True gives each operation its own key; scoped=False shares the charge's key."""
    ledger, provider = world.ledger(), world.provider()
    rows = []
    for operation in ("charge", "receipt"):
        key = idempotency_key(obj, "version", operation if scoped else "charge")
        claimed = ledger.claim_once(key, describe(obj)).won
        if not claimed:
            outcome = "skipped: key already claimed"
        elif operation == "charge":
            outcome = "charged " + provider.charge(customer=obj.key.split("/")[0], amount=500, currency="usd",
                                                  reference=obj.uri).id
        else:
            outcome = f"receipt sent for {obj.key}"
        rows.append(OperationRow(operation, key[:24] + "...", claimed, outcome))
    return rows


@dataclass(frozen=True)
class EncodedName:
    name: str  # the object's name in the bucket
    raw_field: str  # s3.object.key as the event carries it
    decoded: str  # what read_event hands the handler
    key_from_raw: str
    key_from_decoded: str
    lookup_raw: str  # head_object with the raw field
    lookup_decoded: str


def encoded_name(world: LocalWorld, name: str = "alice/my file.csv") -> EncodedName:
    """Upload `name`, read its event, and build a key from the raw field and the decoded name."""
    obj = world.upload(name, ORDER)
    raw = world.event(obj)["Records"][0]["s3"]["object"]["key"]
    decoded = read_event(world.event(obj)).objects[0]
    as_raw = S3Object(**{**decoded.__dict__, "key": raw})
    return EncodedName(name, raw, decoded.key, idempotency_key(as_raw)[:30] + "\u2026",
                       idempotency_key(decoded)[:30] + "\u2026", _lookup(world, raw), _lookup(world, decoded.key))


def _lookup(world: LocalWorld, key: str) -> str:
    try:
        head = world.s3.head_object(Bucket=world.bucket, Key=key)
    except ClientError as error:
        return f"not found ({error.response['Error']['Code']})"
    return f"found, {head['ContentLength']} bytes"


def key_sizes(obj: S3Object) -> list[dict[str, Any]]:
    """Characters and bytes of UTF-8: the object key, a recipe's text, the hashed key, and the
    limits each must fit (Stripe's key in characters, DynamoDB's partition key in bytes)."""
    def row(what: str, text: str) -> dict[str, Any]:
        return {"what": what, "characters": len(text), "bytes": len(text.encode())}

    return [row("object key", obj.key), row("recipe text (version)", describe(obj, "version")),
            row("idempotency key (hashed)", idempotency_key(obj)),
            {"what": "limit: Stripe's idempotency key", "characters": STRIPE_MAX_KEY_CHARS, "bytes": "-"},
            {"what": "limit: DynamoDB partition key", "characters": "-",
             "bytes": keys.MAX_PARTITION_KEY_BYTES}]
