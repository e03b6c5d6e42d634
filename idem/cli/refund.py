"""`python -m idem refund`: refund one charge of a deployed stack (a second charge for one order),
with its own idempotency key, and book the refund in the ledger. A dry run unless --yes."""
from __future__ import annotations

from typing import Any

from .settle import add_stack_options, say, with_stack

HELP = "refund one charge of a stack with its own idempotency key, booked in the ledger (dry run first)"


def configure(parser: Any) -> None:
    parser.add_argument("--charge", required=True, help="the PaymentIntent to refund (pi_...)")
    add_stack_options(parser)


def run(args: Any) -> int:
    return with_stack(args, lambda target: _refund(args, *target))


def _refund(args: Any, dynamodb: Any, table: str, stripe: Any, stack: str) -> int:
    from ..core.runbook import apply_refund, plan_refund

    plan = plan_refund(dynamodb, table, stripe, args.charge, stack)
    refund = apply_refund(dynamodb, table, stripe, plan) if args.yes else ""
    say(args, plan, bool(args.yes), refund=refund or None)
    return 0
