"""`python -m idem settle`: settle one order of a deployed stack: book the charge Stripe made, or
release the record for a retry. It shows what it will do and asks (at a terminal), or acts with
--yes (scripts); either way it needs --reason, and it records who ran it (the caller's ARN from STS)
and why in the ledger (an `audit#...` item)."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

from ..console import fail

HELP = "settle one order of a stack: book the charge Stripe made, or release it for a retry (dry run first)"


def configure(parser: Any) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", help="the order's idempotency key (charge#...), as the reconciliation report prints it")
    which.add_argument("--charge", help="or a PaymentIntent id (pi_...): the order its metadata names")
    add_stack_options(parser)


def add_stack_options(parser: Any) -> None:
    parser.add_argument("--stack", required=True, help="the deployed stack's name (its LedgerTableName output "
                        "and StripeSecretParameter parameter are read)")
    parser.add_argument("--key-parameter", help="the SSM SecureString holding the Stripe key to use: a "
                        "restricted key with only this command's permissions (README); default: the stack's own "
                        "StripeSecretParameter")
    parser.add_argument("--region", help="the stack's region (default: your AWS config)")
    parser.add_argument("--profile", help="a named profile from your AWS config")
    parser.add_argument("--yes", action="store_true", help="do it without asking (scripts); without it the "
                        "command shows what it will do and asks at a terminal, and only shows it elsewhere")
    parser.add_argument("--reason", default="", help="why (a ticket, an alarm): recorded in the ledger with "
                        "who ran the command; required to act")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: Any) -> int:
    return with_stack(args, lambda target: _settle(args, *target))


def _settle(args: Any, dynamodb: Any, table: str, stripe: Any, stack: str, who: str) -> int:
    from ..core.reconcile.runbook import apply_settle, plan_settle

    plan = plan_settle(dynamodb, table, stripe, key=args.key or "", charge=args.charge or "", stack=stack)
    done = confirmed(args, plan)
    if done:
        act_and_record(dynamodb, table, "settle", plan, who, args.reason, lambda: apply_settle(dynamodb, table, plan))
    say(args, plan, done)
    return 0


def confirmed(args: Any, plan: Any, ask: Callable[[str], str] | None = None) -> bool:
    """Whether to act: --yes, or a person's "yes" at a terminal after seeing the plan. Acting
    needs --reason (RunbookError otherwise: nothing is done)."""
    from ..core.reconcile.runbook import RunbookError

    if plan.action == "nothing":
        return False
    if not (args.yes or sys.stdin.isatty()):
        return False  # a dry run: the plan is printed, nothing changes
    if not args.reason.strip():
        raise RunbookError("--reason is required to act (a ticket or an alarm): it is recorded in the ledger "
                           "with who ran the command; nothing was changed")
    if args.yes:
        return True
    print(plan.render(False).split("\ndry run:")[0])
    return (ask or input)("do it? type yes: ").strip().lower() == "yes"


def act_and_record(dynamodb: Any, table: str, command: str, plan: Any, who: str, why: str,
                   act: Callable[[], Any]) -> Any:
    """Do it, then record who did it and why, whatever became of it (a failure is recorded too)."""
    from ..core.reconcile.runbook import record_audit

    try:
        result = act()
    except Exception as error:
        record_audit(dynamodb, table, command=command, plan=plan, who=who, why=why,
                     outcome=f"failed: {type(error).__name__}: {str(error)[:200]}")
        raise
    record_audit(dynamodb, table, command=command, plan=plan, who=who, why=why, outcome=f"done {result or ''}".strip())
    return result


def say(args: Any, plan: Any, done: bool, **extra: Any) -> None:
    if args.json:
        print(json.dumps({"subject": plan.subject, "action": plan.action, "done": done, "because": plan.because,
                          "charge": plan.intent.id if plan.intent else None,
                          "others": [o.id for o in plan.others], **extra}))
    else:
        print(plan.render(done))


def with_stack(args: Any, act: Callable[[tuple[Any, str, Any, str, str]], int]) -> int:
    """Open the stack (its ledger table and Stripe), run `act`, and turn what the user must fix into
    one line and exit code 2. Reading needs no --yes; only writing does (the plan says what)."""
    from botocore.exceptions import BotoCoreError, ClientError  # loaded when the command runs

    from ..core.reconcile.runbook import RunbookError, StripeApi
    from ..deploy.aws.connect import CLIENTS, MustFix, open_session
    from ..deploy.errors import DeployError, explain

    try:
        session = open_session(args.region, True, args.profile)
        described = session.client("cloudformation", config=CLIENTS).describe_stacks(StackName=args.stack)
        stack = described["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        parameters = {p["ParameterKey"]: p["ParameterValue"] for p in stack.get("Parameters", [])}
        if parameters.get("Profile") == "demo" or "ProviderTableName" in outputs:
            return fail(f"{args.stack} is a demo stack: its stand-in provider is not Stripe; settle and refund "
                        "speak to Stripe (a prod stack)")
        if "LedgerTableName" not in outputs or "StripeSecretParameter" not in parameters:
            return fail(f"{args.stack} has no LedgerTableName output or StripeSecretParameter parameter: "
                        "not a stack made from this template")
        secret = session.client("ssm", config=CLIENTS).get_parameter(
            Name=args.key_parameter or parameters["StripeSecretParameter"], WithDecryption=True)["Parameter"]["Value"]
        stripe = StripeApi(secret, os.environ.get("STRIPE_API_BASE") or "https://api.stripe.com")
        who = str(session.client("sts", config=CLIENTS).get_caller_identity()["Arn"])  # who runs it, for the ledger
        return act((session.client("dynamodb", config=CLIENTS), outputs["LedgerTableName"], stripe, args.stack, who))
    except (MustFix, RunbookError) as problem:
        return fail(str(problem))
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ValidationError" and "does not exist" in str(error):
            return fail(f"no stack {args.stack} in {session.region_name}: check --stack and --region")
        if code == "ParameterNotFound":
            return fail(f"the Stripe key's parameter {args.key_parameter or parameters.get('StripeSecretParameter')} does not exist "
                        "in SSM: create it (a SecureString), then retry; nothing was changed")
        return fail(explain(error))
    except (BotoCoreError, DeployError) as error:
        return fail(explain(error) if isinstance(error, BotoCoreError) else str(error))
