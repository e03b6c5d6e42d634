"""Which order an upload is (chapter 03): the handler to copy, keyed, run on moto under each
ORDER_IDENTITY (docs/one_charge_per_order.md), through what an uploader can do to one order.

Each story puts real objects into a fresh moto bucket, as an uploader would, then delivers the
event of every PUT that S3 stored through the function's entry point (HANDLER_MODE keyed), and
reads back what the provider charged, what the ledger holds and what reached the failure queue.
Under `object-name` the uploader writes each name once, with S3's conditional write
(`If-None-Match: *`, which moto enforces as S3 does: 412 Precondition Failed), as the bucket
policy of docs/one_charge_per_order.md would require of it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from ...core.clock import iso8601
from ...core.events import S3Object
from ...sim.runtime import LocalLambda
from ...sim.world import LocalWorld, demo_account

#: ORDER_IDENTITY's three values (keyed_settings.ORDER_IDENTITIES), in the order chapter 03 tells them.
IDENTITIES = ("upload", "order-id", "object-name")
NAME = "alice/A-1001.json"


def order(order_id: str, cents: int) -> bytes:
    """An order file as the handler to copy reads it (keyed_orders.py)."""
    return json.dumps({"order_id": order_id, "amount_cents": cents, "currency": "usd"}).encode()


@dataclass(frozen=True)
class OrderStory:
    title: str
    puts: tuple[tuple[str, bytes], ...]  # (object name, body) of each PUT, in order
    orders: int  # how many orders the uploader meant
    note: str = ""


STORIES: dict[str, OrderStory] = {s.title: s for s in (
    OrderStory("retried PUT", ((NAME, order("A-1001", 1250)), (NAME, order("A-1001", 1250))), 1,
               "the PUT timed out after S3 stored it; the SDK sends it again"),
    OrderStory("second order, same name", ((NAME, order("A-1001", 1250)), (NAME, order("A-1002", 900))), 2,
               "a new order (A-1002) written to the name of the first"),
    OrderStory("corrected re-upload", ((NAME, order("A-1001", 1250)), (NAME, order("A-1001", 1500))), 1,
               "the same order A-1001 again, with another amount"),
)}


@dataclass
class OrderRun:
    identity: str
    story: OrderStory
    stored: list[bool] = field(default_factory=list)  # per PUT: stored (True) or refused by S3 (412)
    charged_cents: list[int] = field(default_factory=list)  # each charge the provider made
    attention: int = 0  # events in the failure queue: a person must look
    reads: int = 0  # GetObject calls the function made (reading order files)

    def row(self) -> dict[str, Any]:
        refused = self.stored.count(False)
        return {"ORDER_IDENTITY": self.identity, "story": self.story.title,
                "PUTs stored": f"{self.stored.count(True)}" + (f" ({refused} refused)" if refused else ""),
                "charges (cents)": ", ".join(map(str, self.charged_cents)) or "none",
                "in failure queue": self.attention, "GetObject calls": self.reads}


def _put(world: LocalWorld, name: str, body: bytes, write_once: bool) -> S3Object | None:
    """One PUT as the uploader sends it; the ObjectCreated record S3 then sends, or None when
    S3 refused the write (a name written once already, under If-None-Match: *)."""
    if not write_once:
        return world.upload(name, body)
    world.link_demo_account(demo_account(name))  # onboarding links who pays, as world.upload does
    try:
        made = world.s3.put_object(Bucket=world.bucket, Key=name, Body=body, IfNoneMatch="*")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "PreconditionFailed":
            return None
        raise
    world.clock.advance(1)  # a distinct sequencer for this put
    return S3Object(bucket=world.bucket, key=name, size=len(body), etag=made["ETag"].strip('"'),
                    sequencer=f"{int(world.clock.now() * 1000):012X}{99:06X}", version_id=made.get("VersionId"),
                    event_time=iso8601(world.clock.now()), region=world.s3.meta.region_name)


def run_order_story(title: str, identity: str) -> OrderRun:
    """One story under one ORDER_IDENTITY, through the keyed handler, on a fresh moto world."""
    story, run = STORIES[title], OrderRun(identity, STORIES[title])
    with LocalWorld(prefix="orders") as world:
        runtime = LocalLambda(world, world.env("keyed", ORDER_IDENTITY=identity))
        for name, body in story.puts:
            obj = _put(world, name, body, write_once=identity == "object-name")
            run.stored.append(obj is not None)
            if obj is not None:
                runtime.send(world.event(obj))
        attempts = runtime.run()
        run.charged_cents = [charge.amount for charge in world.provider().charges()]
        run.attention = world.failure_queue_depth()
        run.reads = sum(a.calls.get("s3:GetObject", 0) for a in attempts)
    return run


def order_grid() -> list[dict[str, Any]]:
    """Every story under every identity: one row each."""
    return [run_order_story(title, identity).row() for title in STORIES for identity in IDENTITIES]


def attention_reason(title: str = "corrected re-upload") -> str:
    """What the failure queue says about the corrected re-upload under order-id: the reason a
    person reads."""
    story = STORIES[title]
    with LocalWorld(prefix="orders") as world:
        runtime = LocalLambda(world, world.env("keyed", ORDER_IDENTITY="order-id"))
        for name, body in story.puts:
            runtime.send(world.event(world.upload(name, body)))
        runtime.run()
        failed = [a for a in runtime.attempts if a.outcome == "error"]
        return failed[-1].error if failed else ""


@dataclass
class CorrectedRun:
    """The corrected re-upload that reaches the provider before the first charge was booked."""

    rows: list[dict[str, Any]]  # one per attempt: which upload, which attempt, when, how it ended
    charged_cents: list[int]  # every charge the provider made
    attention: int  # events in the failure queue
    record: str  # the order's record status in the ledger afterwards


def corrected_before_booked(second_at: float = 40.0) -> CorrectedRun:
    """Order A-1001 is charged 1250, and the function dies before it books the charge (a crash
    right after the provider's answer). The corrected upload (1500) arrives `second_at` seconds
    later, once the first claim's lease has ended: it claims the order, and sends the provider the
    same key with another amount. The provider refuses it (Stripe: idempotency_error)."""
    from ...explore import scenarios as sc  # the crash of chapter 06's runs, at the same place

    story = STORIES["corrected re-upload"]
    crash = sc.fault_of(sc.Scenario("keyed", "after_charge", "once", how="crash"))
    with LocalWorld(prefix="orders") as world:
        runtime = LocalLambda(world, world.env("keyed", ORDER_IDENTITY="order-id"), fault=crash)
        which = {runtime.send(world.event(world.upload(name, body)), at=second_at * n): label
                 for n, ((name, body), label) in enumerate(zip(story.puts, ("first (1250)", "corrected (1500)")))}
        attempts = runtime.run()
        rows = [{"upload": which.get(a.delivery, str(a.delivery)), "attempt": a.attempt, "at (s)": round(a.start),
                 "outcome": "crash after the charge" if a.outcome == "crash"
                 else "needs_attention" if a.error.startswith("NeedsAttention") else a.outcome}
                for a in sorted(attempts, key=lambda a: a.start)]
        # the order's records, not the account's customer mapping (account#alice) beside them
        records = [r for r in world.table_items(world.ledger_table) if r.get("kind", {}).get("S") != "customer"]
        return CorrectedRun(rows, [c.amount for c in world.provider().charges()], world.failure_queue_depth(),
                            ", ".join(str(r.get("status", {}).get("S", "")) for r in records))


def write_once_policy(bucket: str) -> dict[str, Any]:
    """The bucket policy that makes every name written once (ORDER_IDENTITY=object-name).

    Only a Deny refuses a PUT without `If-None-Match`: an Allow with that condition adds nothing
    to an uploader whose own IAM policy already allows s3:PutObject. The second condition spares
    CreateMultipartUpload and UploadPart, which take no conditional header; the upload's
    CompleteMultipartUpload must still carry it. Both conditions must hold for the Deny to apply.
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html
    """
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "DenyWritesWithoutIfNoneMatch",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{bucket}/*",
        "Condition": {"Null": {"s3:if-none-match": "true"},
                      "Bool": {"s3:ObjectCreationOperation": "true"}},
    }]}
