"""`python -m idem check`: any Lambda handler through every schedule (see `idem.explore.check`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..console import UsageError

HELP = "check any Lambda handler against every schedule of faults and deliveries"
#: The workbook's own patterns, by name (`idem.explore.check.PATTERNS`, without importing moto).
PATTERNS = ("naive", "claim_first", "robust", "keyed")
#: What can feed the function (`idem.sim.triggers.TRIGGERS`, without importing moto).
TRIGGERS = ("s3", "sqs", "eventbridge")
#: What the schedules are, and how many each family adds (`idem.explore.check.DIMENSIONS`).
SCHEDULES = ("schedules, in three families (the report counts each; under --trigger sqs, faults only): faults, exhaustive: every fault "
             "at every boundary x one upload delivered once, twice or as a copy at each boundary x "
             "each retry setting; overwrite: a second upload of the same name, in a versioned and an "
             "unversioned bucket, after the first or while it is at each place a copy can start, no "
             "fault: 2 x (1 + places) per retry setting; slow: each call's request or answer in "
             "flight until 1 s before the timeout while a copy starts, no fault: 2 x calls per retry "
             "setting")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="MODULE:FUNCTION or FILE.py:FUNCTION of your handler, or one "
                                       f"of the workbook's patterns: {', '.join(PATTERNS)}")
    parser.add_argument("--effect", action="append", default=[], metavar="SERVICE:Operation",
                        help="an AWS call that must happen once per upload, like the charge "
                             "(repeatable; boto3's client names: sqs:SendMessage, ses:SendEmail, "
                             "sesv2:SendEmail, sns:Publish, events:PutEvents, stepfunctions:StartExecution)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the handler's environment (repeatable)")
    parser.add_argument("--trigger", choices=TRIGGERS, default="s3",
                        help="what feeds the function: s3 (S3 invokes it asynchronously; the default), "
                             "sqs (an SQS event source mapping: batches, batchItemFailures, the "
                             "visibility timeout, maxReceiveCount and the dead-letter queue), or "
                             "eventbridge (S3's Object Created events through EventBridge, asynchronously)")
    parser.add_argument("--retries", default="0,1,2",
                        help="the MaximumRetryAttempts values to try, from 0,1,2 (default all); under "
                             "--trigger sqs, maxReceiveCount is each value + 1")
    parser.add_argument("--provider-factory", default="make_provider",
                        help="the function your handler builds its payment client with; the check "
                             "replaces it with the provider stand-in (default make_provider)")
    parser.add_argument("--provider", choices=("stand-in", "stripe"), default="stand-in",
                        help="what the provider factory returns: the provider stand-in (default), or "
                             "Stripe's own SDK (keyed_stripe.py) aimed at a loopback Stripe with the same rules; "
                             "with stripe, a handler's own Stripe calls (stripe.PaymentIntent.create, "
                             "stripe.StripeClient) go to the loopback Stripe too; a handler whose module "
                             "imports stripe gets stripe by itself")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes to run schedules in (default: 2 where there are 2 cores)")
    parser.add_argument("--books", default=None, metavar="TABLE_ENV:ATTRIBUTE",
                        help="where the handler books its charges: items of the table named by "
                             "TABLE_ENV that carry ATTRIBUTE are ledger lines, weighed against the "
                             "provider's charges; the clean run must book there (default: "
                             "LEDGER_TABLE:charge_id, judged if the clean run books there; none to skip)")
    parser.add_argument("--budget", type=float, default=900.0, metavar="SECONDS",
                        help="real seconds the whole check may take before it gives up (exit 3; default "
                             "900); a handler that finishes no invocation for 90 s is given up on sooner")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON (docs/check-report.schema.json), errors too")
    parser.epilog = SCHEDULES


def run(args: argparse.Namespace) -> int:
    """Check in a child process the handler cannot end, hang or silence (`idem.explore.sandbox`);
    this process prints the answer, JSON under --json on every exit path."""
    from ..explore import lambda_env, sandbox, stripe_sdk  # no moto here: the child imports it

    try:
        given = dict(_pair(item) for item in args.env)
        retries = [_number(part) for part in args.retries.split(",") if part.strip()]
        effects = [_effect(name) for name in args.effect]
        if args.budget <= 0:
            raise UsageError(f"--budget takes a number of seconds above 0, got {args.budget}")
    except UsageError as bad:
        return _answer(args, sandbox.Outcome(2, sandbox.error_json(2, str(bad)), str(bad)))
    target = args.target
    shape = sandbox.handler_shape(target) if ":" in target else ""
    if shape:
        message = sandbox.refuse_shape(target, shape)
        return _answer(args, sandbox.Outcome(2, sandbox.error_json(2, message), message))
    provider = args.provider
    if provider == "stand-in" and target not in PATTERNS and stripe_sdk.uses_stripe(target):
        provider = "stripe"  # its own Stripe calls go to the loopback Stripe (idem.explore.stripe_sdk)
    root = lambda_env.task_root(target)
    env = given if target in PATTERNS else lambda_env.environment(target, root, given=given)
    request = {"target": target, "task_root": root,
               "schedule_seconds": float(os.environ.get("IDEM_CHECK_SCHEDULE_SECONDS") or 0),
               "options": {"effects": effects, "env": env, "retries": retries,
                           "provider_factory": args.provider_factory, "workers": args.workers,
                           "books": args.books, "provider": provider, "trigger": args.trigger}}
    # IDEM_CHECK_STALL_SECONDS: how long no invocation may finish (tests shorten it)
    stall = float(os.environ.get("IDEM_CHECK_STALL_SECONDS") or sandbox.STALL_SECONDS)
    return _answer(args, sandbox.run_sandboxed(request, budget=args.budget, stall=stall))


def _answer(args: argparse.Namespace, outcome: Any) -> int:
    """Print what the check answered: the report, or the handler's traceback and one line."""
    if args.json:
        print(json.dumps(outcome.json, indent=2))
    elif outcome.exit_code in (0, 1):
        print(outcome.text)
    else:
        if outcome.handler_traceback:
            print("the handler's own traceback:\n" + outcome.handler_traceback.rstrip(), file=sys.stderr)
        print(f"idem check: {outcome.text}", file=sys.stderr)
    return int(outcome.exit_code)


def _effect(text: str) -> str:
    from ..explore.service_names import UnknownEffect, effect_name

    try:
        return effect_name(text)
    except UnknownEffect as unknown:
        raise UsageError(str(unknown)) from None


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise UsageError(f"--env {item!r} is not NAME=VALUE")
    return name, value


def _number(part: str) -> int:
    try:
        return int(part)
    except ValueError:
        raise UsageError(f"--retries takes numbers from 0,1,2, got {part!r}") from None
