"""Wrong: tests/handlers/split (the entry point here, its helpers in the package `orderlib/` beside it:
a claim keeping the first attempt's time, one ledger line per charge), but its helper makes the
order's key with Python's built-in hash() (salted per process: "not predictable between repeated
invocations of Python", https://docs.python.org/3/reference/datamodel.html#object.__hash__), and each
Lambda execution environment is its own process: a copy served by another environment makes another
key, another claim, a second charge. Must BREAK (double_charge), as python_hash_key does: the helper
module is the environment's code as much as the entry module is."""
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
