"""Waits on the wall clock for five seconds: on a clock that moves only between invocations the
wait never ends. The check gives up on the schedule in real time and says why (exit 3)."""
import time


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    deadline = time.time() + 5
    while time.time() < deadline:
        pass
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")
    return {"ok": True}
