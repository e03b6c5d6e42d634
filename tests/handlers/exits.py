"""Ends its own process on a clean run: the check cannot judge it (exit 3)."""
import sys


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")
    sys.exit(3)
