"""`python -m idem refund`: refund one charge of a deployed stack (a second charge for one order),
with its own idempotency key, and book the refund in the ledger (a refund Stripe made that the ledger
does not book, because its booking failed or it was made in Stripe's Dashboard, is booked first and
nothing more refunded). Asks first, or --yes; --reason and the caller's ARN are recorded."""
from __future__ import annotations

from typing import Any

from .settle import act_and_record, add_stack_options, confirmed, say, with_stack

HELP = "refund one charge of a stack with its own idempotency key, booked in the ledger (dry run first)"


def configure(parser: Any) -> None:
    parser.add_argument("--charge", required=True, help="the PaymentIntent to refund (pi_...)")
    add_stack_options(parser)


def run(args: Any) -> int:
    return with_stack(args, lambda target: _refund(args, *target))


def _refund(args: Any, dynamodb: Any, table: str, stripe: Any, stack: str, who: str) -> int:
    from ..core.reconcile.runbook import apply_refund, plan_refund

    plan = plan_refund(dynamodb, table, stripe, args.charge, stack)
    done = confirmed(args, plan)
    refund = act_and_record(dynamodb, table, "refund", plan, who, args.reason,
                            lambda: apply_refund(dynamodb, table, stripe, plan)) if done else ""
    say(args, plan, done, refund=refund or None)
    return 0
