"""Charges once per upload (the object's key as the idempotency key) and returns when it charged, as
a datetime. Lambda's Python runtime sends back bytes as they are and encodes anything else as JSON
(Decimal allowed); a datetime it cannot encode, so every invocation fails with Runtime.MarshalError:
Unable to marshal response: Object of type datetime is not JSON serializable (awslambdaric
lambda_runtime_marshaller.py, marshal_response:
https://github.com/aws/aws-lambda-python-runtime-interface-client/blob/main/awslambdaric/lambda_runtime_marshaller.py),
after the charge. It breaks on its clean run (exit 1), never "holds"."""
from datetime import datetime, timezone


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    key = event["Records"][0]["s3"]["object"]["key"]
    make_provider().charge(customer="acct-1", amount=1250, currency="usd", reference=key, idempotency_key=key)
    return {"ok": True, "charged_at": datetime.now(timezone.utc)}
