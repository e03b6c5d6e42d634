"""The answers the function returns."""


def ok(body):
    return {"statusCode": 200, "body": body}
