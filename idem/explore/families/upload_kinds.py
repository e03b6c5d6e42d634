"""An order uploaded otherwise than by PutObject: its own family of schedules, `uploads`.

S3 sends `ObjectCreated:Put` for a PutObject, `ObjectCreated:Post` for a browser's form upload (POST
Object) and `ObjectCreated:CompleteMultipartUpload` for a multipart upload
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html);
EventBridge's `Object Created` says which in `detail.reason` ("PutObject", "POST Object",
"CompleteMultipartUpload": https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html). The AWS
CLI and boto3's `upload_file` upload any file over 8 MB in parts (their `multipart_threshold`:
https://boto3.amazonaws.com/v1/documentation/api/latest/reference/customizations/s3.html). Every other
family uploads by PutObject; this one uploads the clean run's order once by POST and once by a multipart
upload (a real one: its ETag is the parts', `<md5>-1`), no fault, one delivery, the fewest retries. Each
is an order like any other: a function that charges only for `ObjectCreated:Put` loses it silently.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ...sim.world import UPLOAD_EVENTS

FAMILY = "uploads"
#: the S3 API of each upload of the family (LocalWorld.upload's `by`; UPLOAD_EVENTS names its event)
UPLOADS = ("POST Object", "CompleteMultipartUpload")
DESCRIPTION = ("the clean run's order uploaded by POST (ObjectCreated:Post) and by a multipart upload "
               "(ObjectCreated:CompleteMultipartUpload), no fault, one delivery, the fewest retries")


def schedules(schedule: Callable[..., Any], retries: Iterable[int]) -> list[Any]:
    """The family: one schedule per API of UPLOADS (`schedule` is schedule.Schedule)."""
    least = min(retries)
    return [schedule(None, "single", None, least, upload=by) for by in UPLOADS]


def label(by: str) -> str:
    """What a schedule of the family adds to its label."""
    return (f"the order uploaded by {'a multipart upload' if by == 'CompleteMultipartUpload' else 'POST'} "
            f"({UPLOAD_EVENTS[by]})")
