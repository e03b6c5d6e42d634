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
                             "(repeatable; e.g. sqs:SendMessage, ses:SendEmail)")
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
                             "Stripe's own SDK (keyed_stripe.py) aimed at a loopback Stripe with the same rules")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes to run schedules in (default: 2 where there are 2 cores)")
    parser.add_argument("--books", default=None, metavar="TABLE_ENV:ATTRIBUTE",
                        help="where the handler books its charges: items of the table named by "
                             "TABLE_ENV that carry ATTRIBUTE are ledger lines, weighed against the "
                             "provider's charges; the clean run must book there (default: "
                             "LEDGER_TABLE:charge_id, judged if the clean run books there; none to skip)")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON (docs/check-report.schema.json), errors too")
    parser.epilog = SCHEDULES


def run(args: argparse.Namespace) -> int:
    try:
        from ..explore import check  # moto: loaded when the command runs, not for --help
    except ModuleNotFoundError as missing:  # a plain install: the check's own extra is missing
        print(f"idem check needs {missing.name}: pip install 'charged-twice[check]'", file=sys.stderr)
        return 2

    try:
        env = dict(_pair(item) for item in args.env)
        retries = [_number(part) for part in args.retries.split(",") if part.strip()]
        sys.path.insert(0, os.getcwd())  # a handler module next to where you stand
        report = check.check_handler(args.target, effects=args.effect, env=env, retries=retries,
                                     provider_factory=args.provider_factory, workers=args.workers,
                                     books=args.books, provider=args.provider, trigger=args.trigger)
    except UsageError as bad:
        return _refuse(args, check.CheckInputError(str(bad)), check)
    except check.CheckInputError as bad:
        return _refuse(args, bad, check)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.explain())
    return 0 if report.holds else 1


def _refuse(args: argparse.Namespace, bad: Any, check: Any) -> int:
    """Exit 2 (bad input) or 3 (the check could not finish): the handler's own traceback, if its
    code failed, then one line saying what was wrong; under --json the same as JSON."""
    if args.json:
        print(json.dumps(check.error_json(bad), indent=2))
    else:
        if bad.handler_traceback:
            print("the handler's own traceback:\n" + bad.handler_traceback.rstrip(), file=sys.stderr)
        print(f"idem check: {bad}", file=sys.stderr)
    return int(bad.exit_code)


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
