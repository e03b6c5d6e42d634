"""Starts a non-daemon thread at cold start that never ends (a "flusher" waiting for work): on
Lambda it is frozen between invocations and runs inside later ones; the check cannot judge work
no invocation owns (exit 3), and must not hang at its own exit waiting for it."""
import threading

_wake = threading.Event()
threading.Thread(target=_wake.wait, name="metrics-flusher").start()  # non-daemon, waits forever


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    key = event["Records"][0]["s3"]["object"]["key"]
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=key, idempotency_key=key)
    return {"ok": True}
