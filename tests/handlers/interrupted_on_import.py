"""Its module stops its own loading with a KeyboardInterrupt when a setting it expects is absent.
Lambda's runtime catches only Exception while it imports the handler's module (awslambdaric
bootstrap.py, run:
https://github.com/aws/aws-lambda-python-runtime-interface-client/blob/main/awslambdaric/bootstrap.py),
so the Init phase's process ends: no invocation runs. Exit 3 in one line, never "a bug in idem"."""
import os

if "PAYMENTS_MODE" not in os.environ:
    raise KeyboardInterrupt("PAYMENTS_MODE is not set")


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    make_provider().charge(customer="acct-1", amount=1250, currency="usd", reference="x")
    return {"ok": True}
