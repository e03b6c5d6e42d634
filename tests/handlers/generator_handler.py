"""A generator handler (a `yield` per record): Lambda's Python runtime gets a generator object it
cannot return (Runtime.MarshalError) and never runs the body. Bad input (exit 2)."""


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    for record in event["Records"]:
        key = record["s3"]["object"]["key"]
        yield make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=key,
                                     idempotency_key=key).id
