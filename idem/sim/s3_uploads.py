"""The S3 APIs that upload an object, and the event S3 sends for each. No moto here: the template
reader (`idem.explore.target.template_triggers`) reads these before the check's child imports moto."""
from __future__ import annotations

#: The event S3 sends for an upload by each API
#: (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html)
UPLOAD_EVENTS = {"PutObject": "ObjectCreated:Put", "POST Object": "ObjectCreated:Post",
                 "CompleteMultipartUpload": "ObjectCreated:CompleteMultipartUpload"}
