"""Its provider factory needs the API key from the environment, and the check was not given it
(`--env PAYMENTS_API_KEY=...`): what the handler needs is missing. Bad input (exit 2), never a break."""
import os


def make_provider(api_key):
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    provider = make_provider(os.environ["PAYMENTS_API_KEY"])
    provider.charge(customer="acct-1", amount=500, currency="usd", reference="x")
    return {"ok": True}
