"""`python -m idem redrive`: re-send what sits in the failure queue. On a real queue it first shows
what it would send (how many events, to which function) and asks at a terminal; without a terminal
it only shows it, and `--yes` acts without asking (scripts). Acting needs --reason; it records who
sent the events (STS) and why in the function's ledger: an `audit#...` item when it starts (none sent yet) and one when it ends (`done: N
event(s) sent`, or `failed after N event(s) sent: ...`). A function with no LEDGER_TABLE is refused
before anything is sent: a redrive nobody can trace does not start."""
from __future__ import annotations

import json
from typing import Any

from ..console import fail

HELP = "re-send what sits in the failure queue (locally: the 25-hour story, naive and with the lookup)"




def configure(parser: Any) -> None:
    parser.add_argument("--after", type=float, default=25.0,
                        help="hours between the failure and the redrive (default 25, past a day)")
    parser.add_argument("--fresh", action="store_true",
                        help="redrive as naive code does: a new event, stamped now (hides the event's age; keyed "
                             "still knows the key's age from its record)")
    parser.add_argument("--queue-url", help="redrive this real queue (chapter 09's stack) instead")
    parser.add_argument("--function", help="with --queue-url: the function to send the events to")
    parser.add_argument("--region", help="with --queue-url: the queue's region (default: your AWS config)")
    parser.add_argument("--profile", help="with --queue-url: a named profile from your AWS config")
    parser.add_argument("--yes", action="store_true",
                        help="with --queue-url: send without asking (scripts); without it the command shows what "
                             "it would send and asks at a terminal, and only shows it elsewhere")
    parser.add_argument("--reason", default="", help="with --queue-url: why (a ticket, an alarm), recorded "
                        "in the function's ledger with who ran the command; required to send")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: Any) -> int:
    if args.queue_url or args.function:
        return _real(args)
    if args.yes or args.region or args.profile:
        return fail("--yes, --region and --profile go with --queue-url (a real queue)")
    from ..explore import redrive  # moto: loaded when the command runs, not for --help

    if not 0 <= args.after <= 14 * 24:
        return fail("--after must be 0 to 336 hours (SQS keeps a message at most 14 days)")
    outcome = redrive.story(args.after * 3600, fresh=args.fresh)
    if args.json:
        print(json.dumps(outcome))
    else:
        print(f"an upload charged, then failed into the failure queue; {args.after:g} h later, "
              f"redriven {'as a fresh event' if args.fresh else 'as the event it was'}: "
              f"{outcome['charges']} charge(s), record {outcome['record']}")
    return 0


def _real(args: Any) -> int:
    """A deployed stack's failure queue into its function: real AWS. The plan first; sending needs a
    "yes" at a terminal or --yes, and --reason.
    Who sent what, and why, goes into the function's ledger (LEDGER_TABLE) whatever becomes of it:
    a function with no ledger to record in is refused before anything is sent."""
    # boto3 and the deploy helpers: loaded when the command runs, not for --help
    from botocore.exceptions import BotoCoreError, ClientError

    from ..core.reconcile.runbook import Plan, RunbookError, record_audit
    from ..deploy.aws.connect import CLIENTS, MustFix, open_session
    from .settle import confirmed
    from ..deploy.errors import DeployError, explain
    from ..explore import redrive

    if not (args.queue_url and args.function):
        return fail("--queue-url and --function go together: the queue to empty, the function to send to")
    try:
        # reading the queue and the function needs no --yes: only sending does (the plan says what)
        session = open_session(args.region, True, args.profile)
    except MustFix as problem:
        return fail(str(problem))
    except DeployError as problem:
        return _trouble(str(problem))
    try:
        sqs, lambda_client = session.client("sqs", config=CLIENTS), session.client("lambda", config=CLIENTS)
        env = lambda_client.get_function_configuration(FunctionName=args.function).get("Environment", {})
        table = env.get("Variables", {}).get("LEDGER_TABLE")
        if not table:
            return fail(f"{args.function} has no LEDGER_TABLE setting: there is no ledger to record who redrove "
                        "what and why; nothing was sent (redrive into the stack's charge function)")
        waiting = sqs.get_queue_attributes(QueueUrl=args.queue_url, AttributeNames=["ApproximateNumberOfMessages"])
        about = waiting["Attributes"]["ApproximateNumberOfMessages"]
        plan = Plan(f"queue {args.queue_url.rsplit('/', 1)[-1]}", "redrive" if int(about) else "nothing",
                    f"to {args.function}: about {about} event(s) waiting")
        try:
            go = confirmed(args, plan)
        except RunbookError as problem:
            return fail(str(problem).replace("nothing was changed", "nothing was sent"))
        if not go:
            print(json.dumps({"redriven": 0, "waiting": int(about)}) if args.json else plan.render(False))
            return 0
        who = str(session.client("sts", config=CLIENTS).get_caller_identity()["Arn"])
        # who redrove what, and why, beside the books (never overwritten); a failure half-way is
        # recorded too, with how many were sent: each sent event is gone from the queue, so a rerun
        # sends only the rest
        dynamodb, sent = session.client("dynamodb", config=CLIENTS), [0]
        # first a record that it starts: a ledger that refuses it stops the redrive before any
        # event is sent, and a redrive cut short (a laptop closed) still left a trace
        record_audit(dynamodb, table, command="redrive", plan=plan, who=who, why=args.reason, outcome="started")

        def send(event: Any) -> None:
            redrive.invoke_async(lambda_client, args.function, event)
            sent[0] += 1
        try:
            redrive.redrive(sqs, args.queue_url, send)
        except Exception as error:
            record_audit(dynamodb, table, command="redrive", plan=plan, who=who, why=args.reason,
                         outcome=f"failed after {sent[0]} event(s) sent: {type(error).__name__}: {str(error)[:200]}")
            raise
        record_audit(dynamodb, table, command="redrive", plan=plan, who=who, why=args.reason,
                     outcome=f"done: {sent[0]} event(s) sent")
    except (BotoCoreError, ClientError) as error:
        return _trouble(explain(error))
    print(json.dumps({"redriven": sent[0]}) if args.json else f"redriven {sent[0]} event(s) to {args.function}")
    return 0


def _trouble(message: str) -> int:
    """AWS refused or failed something after the checks: one line, exit code 1."""
    fail(message)
    return 1


