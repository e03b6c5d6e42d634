"""Calls a host on the internet: refused during a check, which says so (exit 3)."""
import urllib.request


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")
    try:
        urllib.request.urlopen("http://example.com/hook", timeout=2)
    except OSError:
        pass  # "best effort"
    return {"ok": True}
