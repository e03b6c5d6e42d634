"""Idempotency keys: a name for one piece of work, derived from the event, never the attempt.

A key is `<operation>#<recipe>#<digest>`: scoped per operation (a charge and a receipt for
the same upload need different keys), and a fixed 80-odd bytes whatever the object key, far
under DynamoDB's 2,048-byte partition-key limit. The readable parts travel beside the key
as `describe(obj, recipe)`.
"""
from __future__ import annotations

import hashlib
import time
import uuid
from typing import Callable

from .events import S3Object

Recipe = Callable[[S3Object], str]

#: DynamoDB's limit on a partition key value, in bytes of UTF-8.
MAX_PARTITION_KEY_BYTES = 2048


def by_version(obj: S3Object) -> str:
    """Object key + versionId. Unique per upload, but only in a versioned bucket:
    with versioning off there is no versionId and every upload of a name becomes `null`."""
    return f"{obj.bucket}/{obj.key}#{obj.version_id or 'null'}"


def by_content_and_sequencer(obj: S3Object) -> str:
    """Object key + eTag + sequencer. Works without versioning: the bytes may repeat,
    the sequencer of a new upload does not."""
    return f"{obj.bucket}/{obj.key}#{obj.etag}#{obj.sequencer}"


# The recipes below are anti-patterns, kept here so the chapters can show them failing.

def by_etag_only(obj: S3Object) -> str:
    """ANTI-PATTERN: identical content is not the same event; a re-upload collides."""
    return f"{obj.bucket}/{obj.key}#{obj.etag}"


def by_clock(obj: S3Object) -> str:
    """ANTI-PATTERN: derived from the attempt, not the work; a retry gets a new key."""
    return f"{obj.bucket}/{obj.key}#{time.time_ns()}"


def by_fresh_uuid(obj: S3Object) -> str:
    """ANTI-PATTERN: a new random id per attempt deduplicates nothing."""
    return f"{obj.bucket}/{obj.key}#{uuid.uuid4()}"


RECIPES: dict[str, Recipe] = {
    "version": by_version,
    "content": by_content_and_sequencer,
    "etag_only": by_etag_only,
    "clock": by_clock,
    "uuid": by_fresh_uuid,
}
GOOD_RECIPES = ("version", "content")


def recipe_for(obj: S3Object, recipe: str) -> str:
    """The recipe the function uses for this upload: `version` falls back to `content` when the
    upload has no versionId (versioning suspended or never enabled), because every such upload
    of a name is version `null`, and two orders must never be charged as one."""
    if recipe == "version" and not obj.version_id:
        return "content"
    return recipe


def idempotency_key(obj: S3Object, recipe: str = "version", operation: str = "charge") -> str:
    """The partition key for `operation` on this upload: `charge#version#<sha256>`."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown key recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    if not operation or "#" in operation:
        raise ValueError(f"operation must be a non-empty name without '#', got {operation!r}")
    digest = hashlib.sha256(RECIPES[recipe](obj).encode("utf-8")).hexdigest()
    key = f"{operation}#{recipe}#{digest}"
    assert len(key.encode("utf-8")) <= MAX_PARTITION_KEY_BYTES
    return key


def describe(obj: S3Object, recipe: str = "version") -> str:
    """The readable text a key is hashed from, stored beside the record for humans."""
    return RECIPES[recipe](obj)
