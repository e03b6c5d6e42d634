"""The team's own set-up for the archiving handlers (`--setup tests/handlers/archive_setup.py:create`):
the archive bucket, created on the check's AWS, its name given to the handler's environment."""


def create(session):
    session.client("s3").create_bucket(Bucket="orders-archive-123456789012")
    return {"ARCHIVE_BUCKET": "orders-archive-123456789012"}
