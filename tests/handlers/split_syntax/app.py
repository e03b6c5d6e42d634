"""The entry module is fine; the helper it imports has a syntax error (a merge left half a line). Lambda's
Init fails with Runtime.UserCodeSyntaxError: the handler cannot be loaded. Bad input (exit 2)."""
from orders_helper import charge_order


def lambda_handler(event, context):
    return charge_order(event)
