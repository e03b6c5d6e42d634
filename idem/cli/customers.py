"""`python -m idem customers`: who pays for an account of a deployed stack (the customer mapping
the handler reads; docs/money_contract.md). `link ACCOUNT cus_... --reason TEXT` links an account
to its Stripe customer, recording who linked it (STS GetCallerIdentity) and why: a dry run unless
--yes. `show ACCOUNT` prints the link."""
from __future__ import annotations

import json
from typing import Any

from ..console import fail

HELP = "link an account to the Stripe customer who pays for it, or show the link (the runbook's only writer)"


def configure(parser: Any) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB", help="link or show")
    linking = verbs.add_parser("link", help="link ACCOUNT to a Stripe customer (cus_...): a dry run unless --yes")
    linking.add_argument("account", help="the account: the first folder of its uploads' keys (alice/order.json: alice)")
    linking.add_argument("customer", help="the Stripe customer id (cus_...) that pays for its orders")
    linking.add_argument("--reason", required=True, help="why (an onboarding ticket, a request): kept with the link")
    linking.add_argument("--yes", action="store_true", help="write the link; without --yes, only say what would be done")
    showing = verbs.add_parser("show", help="show the customer ACCOUNT is linked to")
    showing.add_argument("account")
    for sub in (linking, showing):
        sub.add_argument("--stack", required=True, help="the deployed stack's name (its LedgerTableName output is read)")
        sub.add_argument("--region", help="the stack's region (default: your AWS config)")
        sub.add_argument("--profile", help="a named profile from your AWS config")
        sub.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: Any) -> int:
    from botocore.exceptions import BotoCoreError, ClientError  # loaded when the command runs

    from ..core import customers
    from ..deploy.aws.connect import CLIENTS, MustFix, open_session
    from ..deploy.errors import explain

    try:
        session = open_session(args.region, True, args.profile)
        described = session.client("cloudformation", config=CLIENTS).describe_stacks(StackName=args.stack)
        outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Stacks"][0].get("Outputs", [])}
        if "LedgerTableName" not in outputs:
            return fail(f"{args.stack} has no LedgerTableName output: not a stack made from this template")
        dynamodb, table = session.client("dynamodb", config=CLIENTS), outputs["LedgerTableName"]
        before = customers.show(dynamodb, table, args.account)
        if args.verb == "show":
            _say(args, before, done=False, action="show")
            return 0 if before else fail(f"account {args.account} has no linked customer: run "
                                         f"idem customers link {args.account} cus_... --reason TEXT --stack {args.stack}")
        if not args.yes:
            plan = customers.Link(args.account, args.customer, "(you)", 0, args.reason)
            _say(args, plan, done=False, action="link", was=before)
            return 0
        caller = customers.caller_arn(session.client("sts", config=CLIENTS))
        import time

        made = customers.link(dynamodb, table, args.account, args.customer, reason=args.reason, caller=caller,
                              now=time.time())
        _say(args, made, done=True, action="link", was=before)
        return 0
    except (MustFix, customers.CustomerError) as problem:
        return fail(str(problem))
    except ClientError as error:
        if "does not exist" in str(error):
            return fail(f"no stack {args.stack}: check --stack and --region")
        return fail(explain(error))
    except BotoCoreError as error:
        return fail(explain(error))


def _say(args: Any, link: Any, *, done: bool, action: str, was: Any = None) -> None:
    if args.json:
        print(json.dumps({"action": action, "done": done, "account": args.account,
                          "customer": link.customer if link else None, "linked_by": link.linked_by if link else None,
                          "reason": link.reason if link else None, "was": was.customer if was else None}))
    elif action == "show":
        print(link.render() if link else f"account {args.account}: no linked customer")
    else:
        then = f" (was {was.customer})" if was else ""
        print(("linked: " if done else "would link (dry run; --yes to write): ")
              + f"account {args.account} -> {args.customer}{then}, because {args.reason}")
