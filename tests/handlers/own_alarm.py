"""Guards its provider call with its own SIGALRM timer (replacing the check's bound on a
schedule), then waits on time.time(), a clock the check moves only between calls: the check
must still answer, in bounded time (exit 3, naming the alarm)."""
import signal
import time


class TookTooLong(Exception):
    pass


def _ring(signum, frame):
    raise TookTooLong()


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    key = event["Records"][0]["s3"]["object"]["key"]
    signal.signal(signal.SIGALRM, _ring)
    signal.alarm(5)
    try:
        make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=key, idempotency_key=key)
    finally:
        signal.alarm(0)
    settle = time.time() + 1  # "let the provider settle"
    while time.time() < settle:
        pass
    return {"ok": True}
