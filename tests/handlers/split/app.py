"""Correct, split as teams split a function: the entry point here, its helpers in the package
`orderlib/` beside it. Lambda puts the function's folder first on sys.path; so must the check."""
from orderlib.charging import book_once, order_key


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider = make_provider()
    for record in event["Records"]:
        key = order_key(record)
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=record["s3"]["object"]["key"],
                                 idempotency_key=key)
        book_once(key, charge.id)
    return {"ok": True}
