"""Correct, split as teams split a function: the entry point here, its helpers in the package
`orderlib/` beside it (the order's key from the account and the order, a claim that keeps the first
attempt's time, one ledger line per charge). Lambda puts the function's folder first on sys.path;
so must the check."""
from orderlib.charging import book_once, claim, order_key


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider = make_provider()
    for record in event["Records"]:
        key = order_key(record)
        if not claim(key):
            continue  # booked already: a copy, a retry, or the same order sent again
        charge = provider.charge(customer="acct-1", amount=500, currency="usd", reference=record["s3"]["object"]["key"],
                                 idempotency_key=key)
        book_once(key, charge.id)
    return {"ok": True}
