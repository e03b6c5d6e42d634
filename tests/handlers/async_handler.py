"""An `async def` handler: Lambda's Python runtime calls it, gets a coroutine, and fails with
Runtime.MarshalError; the body never runs. Bad input (exit 2), said as Lambda would."""


def make_provider():
    raise RuntimeError("the check replaces this")


async def lambda_handler(event, context):
    key = event["Records"][0]["s3"]["object"]["key"]
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference=key, idempotency_key=key)
    return {"ok": True}
