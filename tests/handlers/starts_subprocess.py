"""Charges, then hands the receipt to a command-line tool in a subprocess: what the subprocess does
escapes every boundary the check watches. The check cannot finish (exit 3), never a verdict."""
import subprocess
import sys


def make_provider():
    raise RuntimeError("the check replaces this")


def lambda_handler(event, context):
    charge = make_provider().charge(customer="acct-1", amount=500, currency="usd", reference="x")
    subprocess.run([sys.executable, "-c", f"print('receipt {charge.id}')"], check=True)
    return {"ok": True}
