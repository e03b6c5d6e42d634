"""A bad input the check cannot load, as teams write one: its own helper module `responses.py` (the
answers it returns) has the name of `responses`, a package moto runs on inside the check's process,
where one name is one module. On Lambda the function's folder comes first and its own module is
imported; the check cannot give the function its own and moto moto's. Must EXIT 2 with one line
that names the module and says to rename it (before: exit 3, "idem check itself failed ... a bug in
idem")."""
from urllib.parse import unquote_plus

from responses import ok


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider = make_provider()
    for record in event["Records"]:
        key = unquote_plus(record["s3"]["object"]["key"])
        provider.charge(customer="acct-1", amount=500, currency="usd", reference=key, idempotency_key=key)
    return ok("charged")
