"""Logs the upload, then closes sys.stdout (a clean-up copied from a script), then logs again. On
Lambda the runtime's own logs go to a descriptor of its own (awslambdaric bootstrap.py,
FramedTelemetryLogSink:
https://github.com/aws/aws-lambda-python-runtime-interface-client/blob/main/awslambdaric/bootstrap.py)
and it goes on; the handler's next print fails with ValueError: I/O operation on closed file, so its
invocation fails with no fault at all: breaks on its clean run (exit 1), with what it logged before
closing, never "a bug in idem"."""
import sys


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    key = event["Records"][0]["s3"]["object"]["key"]
    print(f"charging for {key}")
    sys.stdout.close()
    make_provider().charge(customer="acct-1", amount=1250, currency="usd", reference=key, idempotency_key=key)
    print(f"charged for {key}")
    return {"ok": True}
