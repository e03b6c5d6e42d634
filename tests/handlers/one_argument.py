"""Takes the event only: Lambda calls a Python handler with (event, context), so every invocation
fails with a TypeError before its first line. Bad input (exit 2), never a break."""


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event):
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")
