"""Check a reader's key recipe against the pitfalls chapter 03 teaches.

A recipe here is what a handler would write: a function from one S3 event record (a dict,
one entry of `event["Records"]`, exactly as S3 sends it) to the idempotency key, the string
stored as the ledger's partition key. It may take the Lambda context as a second argument,
as the handler has it.

    report = check_recipe(my_recipe)
    print(report)            # one line per pitfall: pass, or FAIL and why in one sentence
    report.passed            # True when every pitfall passed

The events are real: uploads into moto buckets (one versioned, one not), read back as the
records S3 would send for them (see LocalWorld.upload). The pitfalls:

- Lambda retries the event: the same record and the same request id, a minute later.
  Lambda keeps the request id on its retries of an event (AWS knowledge center, "Why is my
  Lambda function receiving duplicate invocations": retries that share a request ID are
  Lambda's). The check moves `time.time` and `time.time_ns` on by a minute for this call,
  so a key from the clock changes as it would on AWS (a key from `datetime.now()` changes
  too, by the time the check takes, which is all it needs to fail).
- S3 delivers the event twice: the same record, a new invocation with a new request id, a
  few seconds later (the clock moved on as for the retry).
- The same bytes uploaded twice under one name, in a versioned bucket: two uploads, each its
  own key (whether they are one order is chapter 03's last section, not this recipe's).
- The same, in a bucket without versioning: the records carry no versionId at all.
- The same, with each record's versionId the text "null": AWS documents the field as the
  object's version in a versioned bucket, "otherwise null" (notification-content-structure),
  where this workbook's world leaves it out. Chapter 03 runs only the missing field, so this is
  the exercise's case the chapter did not run.
- Two names whose records carry the same sequencer: a sequencer orders the events "for a given
  object key" (notification-content-structure), so another name's may be the same text; the
  check gives a real upload of another name the first upload's sequencer.
- A name of 1,024 bytes, S3's longest: the key goes to the provider too (chapter 06), and
  Stripe's idempotency keys are at most 255 characters, so it must fit them (and DynamoDB's
  2,048-byte partition key, which a key that fits Stripe's always does).

Decoding the name (S3 writes a space as `+`, chapter 03) is not a pitfall here: S3 writes each
name one way only, so a key from the raw field is still one key per upload. Its harm is that it
names no object in the bucket, which the chapter shows with `key_stories.encoded_name`.
"""
from __future__ import annotations

import copy
import functools
import inspect
import textwrap
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from unittest import mock

from ...core.clock import VirtualClock
from ...core.events import s3_record
from ...core.keys import MAX_PARTITION_KEY_BYTES
from ..answers import not_yet, unfilled
from .key_stories import STRIPE_MAX_KEY_CHARS
from ...sim.runtime import LambdaContext
from ...sim.world import LocalWorld

KeyRecipe = Callable[..., str]  # (record) or (record, context) -> the idempotency key

ORDER = b"sku,qty\nledger,1\n"
NAME = "alice/order.csv"
OTHER = "bob/order.csv"
LONG = "alice/" + "\u00e9" * 509  # 6 + 2 x 509 = 1,024 bytes of UTF-8, the longest S3 allows
RETRY_DELAY = 60.0  # seconds: Lambda's first retry comes about a minute later
DUPLICATE_DELAY = 5.0  # seconds: S3's second delivery may come at any time; here, a little later


@dataclass(frozen=True)
class Events:
    """The records the pitfalls feed a recipe, built once from real uploads."""

    upload: dict[str, Any]  # one upload of NAME, versioned bucket
    versioned_pair: tuple[dict[str, Any], dict[str, Any]]  # two uploads of NAME, same bytes
    unversioned_pair: tuple[dict[str, Any], dict[str, Any]]  # the same, bucket without versioning
    null_version_pair: tuple[dict[str, Any], dict[str, Any]]  # the same, each versionId "null"
    long: dict[str, Any]  # an upload of LONG
    other_name: dict[str, Any]  # an upload of OTHER, with `upload`'s sequencer


@functools.cache
def events() -> Events:
    """Upload the objects the pitfalls need and build their records (each with the request
    id of its own upload, as S3 sets `x-amz-request-id`)."""
    made: list[dict[str, Any]] = []

    def record(obj: Any) -> dict[str, Any]:
        made.append(s3_record(obj, request_id=f"{0x5EED0000 + len(made):016X}"))
        return made[-1]

    with LocalWorld(prefix="recipes") as world, LocalWorld(prefix="recipes", versioned=False) as plain:
        upload = record(world.upload(NAME, ORDER))
        world.clock.advance(1)
        versioned_pair = (upload, record(world.upload(NAME, ORDER)))
        first = record(plain.upload(NAME, ORDER))
        plain.clock.advance(1)
        unversioned_pair = (first, record(plain.upload(NAME, ORDER)))
        long = record(world.upload(LONG, ORDER))
        other_name = copy.deepcopy(record(world.upload(OTHER, ORDER)))
    other_name["s3"]["object"]["sequencer"] = upload["s3"]["object"]["sequencer"]
    null_version_pair = tuple(_with_null_version(r) for r in unversioned_pair)
    return Events(upload, versioned_pair, unversioned_pair, null_version_pair, long, other_name)


def _with_null_version(record: dict[str, Any]) -> dict[str, Any]:
    """The record as AWS documents it for an unversioned bucket: `versionId` is "null"
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)."""
    record = copy.deepcopy(record)
    record["s3"]["object"]["versionId"] = "null"
    return record


@dataclass(frozen=True)
class Finding:
    pitfall: str
    passed: bool
    why: str = ""  # one sentence, when it failed

    def __str__(self) -> str:
        if self.passed:
            return f"pass  {self.pitfall}"
        return textwrap.fill(f"FAIL  {self.pitfall}: {self.why}", width=100, subsequent_indent="      ")


@dataclass
class RecipeReport:
    findings: list[Finding] = field(default_factory=list)
    hint: str = ""  # the answer to an empty recipe, instead of the findings

    @property
    def passed(self) -> bool:
        return not self.hint and all(f.passed for f in self.findings)

    @property
    def failed(self) -> list[str]:
        return [f.pitfall for f in self.findings if not f.passed]

    def __str__(self) -> str:
        if self.hint:
            return self.hint
        lines = [str(f) for f in self.findings]
        if self.passed:
            lines.append(f"Right: the recipe passes all {len(self.findings)} pitfalls.")
        else:
            lines.append(f"{len(self.failed)} of {len(self.findings)} pitfalls fail.")
        return "\n".join(lines)


class _Broken(Exception):
    """The recipe raised, or returned something that cannot be a key."""


def _context(request_id: str) -> LambdaContext:
    return LambdaContext(request_id, "idem-charge", 30.0, VirtualClock())


def _takes_context(recipe: KeyRecipe) -> bool:
    try:
        inspect.signature(recipe).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (some builtins): try the record alone
        return False
    return True


@contextmanager
def _later(seconds: float) -> Iterator[None]:
    """`time.time` and `time.time_ns` read `seconds` later than they do (for one call)."""
    now, now_ns = time.time, time.time_ns
    with mock.patch.object(time, "time", lambda: now() + seconds), \
            mock.patch.object(time, "time_ns", lambda: now_ns() + int(seconds * 1e9)):
        yield


class _Caller:
    def __init__(self, recipe: KeyRecipe) -> None:
        if not callable(recipe):
            raise TypeError(f"a key recipe is a function (record) -> str, got {type(recipe).__name__}")
        self.recipe = recipe
        self.with_context = _takes_context(recipe)

    def key(self, record: dict[str, Any], request_id: str = "first-invocation", *,
            where: str = "", later: float = 0.0) -> str:
        """The recipe's key for a copy of `record` (a recipe may change what it is given)."""
        args: tuple[Any, ...] = (copy.deepcopy(record),)
        if self.with_context:
            args += (_context(request_id),)
        try:
            if later:
                with _later(later):
                    key = self.recipe(*args)
            else:
                key = self.recipe(*args)
        except Exception as error:  # noqa: BLE001 - the reader's code: report it, whatever it is
            raise _Broken(_raised(error, where)) from None
        if not isinstance(key, str) or not key:
            raise _Broken(f"the recipe returned {key!r}{where}; a key must be a non-empty string, "
                          "which DynamoDB can store as a partition key")
        return key


def _raised(error: Exception, where: str) -> str:
    text = f"the recipe raised {type(error).__name__}: {error}{where}"
    if isinstance(error, KeyError) and error.args == ("versionId",):
        text += ", whose record has no versionId field at all"
    return text


# -- the pitfalls ----------------------------------------------------------------------------
def lambda_retry(call: _Caller, ev: Events) -> str | None:
    first = call.key(ev.upload)
    if call.key(ev.upload, later=RETRY_DELAY) != first:
        return ("Lambda's retry, a minute later with the same record and request id, got a new key "
                "and would charge again: what in your key changes from one call to the next?")
    return None


def s3_duplicate(call: _Caller, ev: Events) -> str | None:
    first = call.key(ev.upload, "first-invocation")
    if call.key(ev.upload, "second-invocation", later=DUPLICATE_DELAY) == first:
        return None
    if call.key(ev.upload, "first-invocation", later=DUPLICATE_DELAY) == first:
        return ("S3's second delivery is a new invocation with a new request id, and the key "
                "changed with it, so the duplicate would charge again: what does the key take from the context?")
    return ("the key changed between two deliveries of the same record (a clock or a random id?), "
            "so S3's second delivery would charge again")


def same_bytes_versioned(call: _Caller, ev: Events) -> str | None:
    first, second = (call.key(r) for r in ev.versioned_pair)
    if first == second:
        return (f"two uploads of {NAME} with the same bytes got one key, so the second upload "
                "would never be charged: which field of the record is new for every upload?")
    return None


def same_bytes_unversioned(call: _Caller, ev: Events) -> str | None:
    where = " on an upload to a bucket without versioning"
    first, second = (call.key(r, where=where) for r in ev.unversioned_pair)
    if first == second:
        return (f"two uploads of {NAME} to a bucket without versioning (no versionId) got one key, "
                "so the second upload would never be charged: which field still differs per upload there?")
    return None


def same_bytes_null_version(call: _Caller, ev: Events) -> str | None:
    where = ' on an upload whose versionId is "null"'
    first, second = (call.key(r, where=where) for r in ev.null_version_pair)
    if first == second:
        return (f'two uploads of {NAME} whose records both say versionId "null" got one key, so the '
                'second upload would never be charged: does "null" name a version?')
    return None


def same_sequencer_other_name(call: _Caller, ev: Events) -> str | None:
    if call.key(ev.other_name, where=f" on an upload of {OTHER}") == call.key(ev.upload):
        return (f"{OTHER} got the key of {NAME}, whose record carries the same sequencer: one of the two "
                "orders would never be charged, as a sequencer orders the events of one object name only; "
                "what names the object?")
    return None


def long_name(call: _Caller, ev: Events) -> str | None:
    key = call.key(ev.long, where=" on a 1,024-byte name")
    if len(key) > STRIPE_MAX_KEY_CHARS:
        encoded = " (the event carries the name URL-encoded: each \u00e9 is six characters, %C3%A9)" \
            if "%C3%A9" in key else ""
        return (f"the key for a 1,024-byte name is {len(key):,} characters{encoded}, over Stripe's "
                f"{STRIPE_MAX_KEY_CHARS}-character limit for the idempotency key the provider "
                "gets: what turns any text into a string of one fixed size?")
    # 255 characters are at most 1,020 bytes of UTF-8: within DynamoDB's partition key as well.
    assert STRIPE_MAX_KEY_CHARS * 4 <= MAX_PARTITION_KEY_BYTES
    return None


PITFALLS: dict[str, Callable[[_Caller, Events], str | None]] = {
    "Lambda retries the event": lambda_retry,
    "S3 delivers the event twice": s3_duplicate,
    "same bytes twice, versioned bucket": same_bytes_versioned,
    "same bytes twice, no versioning": same_bytes_unversioned,
    'same bytes twice, versionId "null"': same_bytes_null_version,
    "another name, the same sequencer": same_sequencer_other_name,
    "the longest name S3 allows": long_name,
}


def check_recipe(recipe: KeyRecipe) -> RecipeReport:
    """Run `recipe` against every pitfall; each finding says pass, or why it fails."""
    call, ev = _Caller(recipe), events()
    try:
        first = recipe(*((copy.deepcopy(ev.upload), _context("first-invocation")) if call.with_context
                         else (copy.deepcopy(ev.upload),)))
    except Exception:  # noqa: BLE001 - the reader's code: the pitfalls below report it
        first = ""
    if unfilled(first):
        return RecipeReport(hint=not_yet("my_recipe returns no key: return the idempotency key, a string"))
    findings = []
    for name, pitfall in PITFALLS.items():
        try:
            why = pitfall(call, ev)
        except _Broken as broken:
            why = str(broken)
        findings.append(Finding(name, why is None, why or ""))
    return RecipeReport(findings)
