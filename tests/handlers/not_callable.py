"""Its Handler setting names a value, not a function (a dict of routes left where the function was):
Lambda cannot call it. Bad input (exit 2), never a break."""


def make_provider():
    raise RuntimeError("the check replaces this")


def charge(event, context):
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")


lambda_handler = {"ObjectCreated": charge}
