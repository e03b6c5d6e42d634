"""The function app.py re-exports: one charge per invocation, with no idempotency key, so a second
delivery of the same event charges again (S3 delivers an event at least once:
https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html): breaks."""


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    for record in event["Records"]:
        make_provider().charge(customer="acct-1", amount=1250, currency="usd",
                               reference=record["s3"]["object"]["key"])
    return {"ok": True}
