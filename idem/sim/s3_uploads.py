"""The S3 APIs that create an object, and the event S3 sends for each. No moto here: the template
reader (`idem.explore.target.template_triggers`) reads these before the check's child imports moto."""
from __future__ import annotations

#: The event S3 sends for an object created by each API
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html);
#: EventBridge's `detail.reason` is the API's name (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html).
#: The check uploads by the first three; a copy is the function's own (`idem.sim.own_writes`).
UPLOAD_EVENTS = {"PutObject": "ObjectCreated:Put", "POST Object": "ObjectCreated:Post",
                 "CompleteMultipartUpload": "ObjectCreated:CompleteMultipartUpload",
                 "CopyObject": "ObjectCreated:Copy"}
