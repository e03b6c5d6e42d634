"""The objects a handler itself creates in S3, as they land: each one S3 may tell the function of.

S3 sends an event for every object created in a bucket whose notification (or EventBridge rule)
takes it, whoever wrote it: "if the bucket triggers a function each time an object is uploaded, and
the function uploads an object to the bucket, then the function indirectly triggers itself"
(https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html). Two botocore hooks note each S3 write
that succeeded (its bucket and key before the request is built, its answer after the call) and hand
it to the running invocation's watch (`Watch.own_write`, set by whoever runs the function: the
check decides whether the trigger takes it, `idem.explore.run.own_writes`).
"""
from __future__ import annotations

from typing import Any, Callable

#: The S3 calls that create an object, by the API name S3's event and EventBridge's reason give them.
CREATES = {"s3:PutObject": "PutObject", "s3:CopyObject": "CopyObject",
           "s3:CompleteMultipartUpload": "CompleteMultipartUpload"}
_WHERE = "idem_own_write"
#: The watch and invocation the running code belongs to (boundary.current, handed over by `watch_own_writes`).
_current: Callable[[], Any] = lambda: None  # noqa: E731


def _name(model: Any) -> str:
    return f"{model.service_model.endpoint_prefix}:{model.name}"


def _noted(params: Any = None, model: Any = None, context: Any = None, **_: Any) -> None:
    """before-parameter-build: keep the bucket and key an object-creating call names."""
    if model is None or not isinstance(context, dict) or not isinstance(params, dict) or _name(model) not in CREATES:
        return
    running = _current()
    if running is not None and getattr(running[0], "own_write", None) is not None:
        context[_WHERE] = (params.get("Bucket"), params.get("Key"))


def _created(model: Any = None, http_response: Any = None, context: Any = None, parsed: Any = None,
             **_: Any) -> None:
    """after-call: an object created (a 2xx answer) is handed to the invocation's watch."""
    if model is None or not isinstance(context, dict) or _WHERE not in context:
        return
    bucket, key = context.pop(_WHERE)
    running = _current()
    if running is None or getattr(http_response, "status_code", 200) >= 300 or not bucket or not key:
        return
    own_write = getattr(running[0], "own_write", None)
    if own_write is not None:
        own_write(running[1], CREATES[_name(model)], str(bucket), str(key),
                  parsed if isinstance(parsed, dict) else {})


def watch_own_writes(events: Any, current: Callable[[], Any]) -> None:
    """Put the two hooks on a botocore event system (with the boundary hooks: `watch_events`)."""
    global _current
    _current = current
    events.register("before-parameter-build", _noted, unique_id="idem-own-write-params")
    # first among after-call's handlers: a fault injected after the call (its answer lost, the
    # process dying) raises from the boundary's handler, and the object was created all the same
    events.register_first("after-call", _created, unique_id="idem-own-write-done")
