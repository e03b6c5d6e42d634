"""Where the check's uploads land, as the function's trigger declares it (`--template`).

- The bucket: the one the trigger names (SAM's `Events.*.Properties.Bucket`, or the bucket whose
  `NotificationConfiguration` names the function), by its template name, so the event's bucket is
  the one the function's code and settings expect. Each of the check's worlds makes it afresh
  (versioned or not, as the schedule needs) in place of its own (`use_bucket`).
- The key: one the trigger's filter accepts. S3 invokes the function only for keys that begin with
  the filter's prefix and end with its suffix
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-filtering.html), so the
  check's own names (`checkNNNNN/order 1 ü.json`) go under the prefix and take the suffix
  (`incoming/checkNNNNN/order 1 ü.jpg`), still within S3's 1,024 bytes (`install_filter`). An
  `--object` whose KEY the filter refuses is refused in one line (`refuse_unfiltered`).
"""
from __future__ import annotations

from typing import Any

from .objects import CHECK_KEY, KEY_BYTES

#: The bucket the function's trigger names (set in the check's process before any world): "" for
#: each world's own.
UPLOAD_BUCKET = ""
#: The prefix of the trigger's key filter (set in the check's process before any world): another
#: account's upload goes under it (`accounts.other_account_key`).
KEY_PREFIX = ""
#: The suffix of the trigger's key filter (set with KEY_PREFIX): with it, which of the function's own
#: writes its trigger takes (`idem.explore.run.own_writes`).
KEY_SUFFIX = ""
#: The uploads the function's trigger delivers, by S3 API (`idem.sim.s3_uploads.UPLOAD_EVENTS`' keys; set in
#: the check's process before any world): empty for every one. S3 invokes a function only for the
#: event types it is subscribed to, an EventBridge rule only for the `detail.reason` it matches
#: (docs/check_from_a_template.md, P22): another upload is an order nothing is told of.
DELIVERED_BY: tuple[str, ...] = ()
#: The trigger's bucket encrypts with a KMS key by default (`TemplateFunction.etags_not_md5`; set in the
#: check's process before any world): each upload's eTag is its own, no MD5 of its bytes (`LocalWorld.upload`).
ETAGS_NOT_MD5 = False


def delivers(by: str) -> bool:
    """Whether the function's trigger delivers an upload made by the S3 API `by`."""
    return not DELIVERED_BY or by in DELIVERED_BY


def use_bucket(world: Any, name: str = "") -> Any:
    """Make `world` upload into `name` (default UPLOAD_BUCKET) instead of its own bucket: a fresh
    bucket of that name, versioned as the world is. Returns the world."""
    name = name or UPLOAD_BUCKET
    world.etags_not_md5 = ETAGS_NOT_MD5
    if not name or world.bucket == name:
        return world
    s3 = world.s3
    s3.delete_bucket(Bucket=world.bucket)  # its own, still empty
    try:
        s3.head_bucket(Bucket=name)
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            objects = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                       for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
            if objects:
                s3.delete_objects(Bucket=name, Delete={"Objects": objects, "Quiet": True})
        s3.delete_bucket(Bucket=name)
    except Exception:  # botocore's ClientError: no such bucket yet
        pass
    s3.create_bucket(Bucket=name)
    if world.versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    world.bucket = name
    return world


def filtered_key(key: str, prefix: str, suffix: str) -> str:
    """One of the check's keys, made one the filter accepts: under `prefix`, ending in `suffix`
    (replacing the name's extension when the suffix is one), within KEY_BYTES."""
    if key.startswith(prefix) and key.endswith(suffix):
        return key
    folder, _, name = key.rpartition("/")
    stem = name.rsplit(".", 1)[0] if suffix.startswith(".") and "." in name else name
    head = f"{prefix}{folder}/" if folder else prefix
    room = KEY_BYTES - len(head.encode()) - len(suffix.encode())
    stem = stem.encode()[:max(1, room)].decode("utf-8", "ignore")  # never half a character
    return f"{head}{stem}{suffix}"


def accepts(key: str, prefix: str, suffix: str) -> bool:
    return key.startswith(prefix) and key.endswith(suffix)


def install_filter(prefix: str, suffix: str) -> None:
    """From now on in this process, the check's own uploads land at keys the filter accepts."""
    if not prefix and not suffix:
        return
    from ...sim.world import LocalWorld

    real_upload = LocalWorld.upload

    def upload(self: Any, key: str, body: bytes | None = None, **kwargs: Any) -> Any:
        if CHECK_KEY.match(key):
            key = filtered_key(key, prefix, suffix)
        return real_upload(self, key, body, **kwargs)

    upload._real = getattr(real_upload, "_real", real_upload)  # type: ignore[attr-defined]
    LocalWorld.upload = upload  # type: ignore[method-assign]


def refuse_unfiltered(key: str, prefix: str, suffix: str) -> str:
    """Why an --object's key never reaches the function, or ""."""
    if accepts(key, prefix, suffix):
        return ""
    wanted = " and ".join(f"{what} {value!r}" for what, value in (("begin with", prefix), ("end with", suffix))
                          if value)
    return (f"--object key {key!r}: the function's S3 trigger filters keys (they must {wanted}), so S3 would "
            "never invoke it for this one; give a KEY the filter accepts")
