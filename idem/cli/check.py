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
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes to run schedules in (default: 2 where there are 2 cores)")
    parser.add_argument("--books", default=None, metavar="TABLE_ENV:ATTRIBUTE",
                        help="where the handler books its charges: items of the table named by "
                             "TABLE_ENV that carry ATTRIBUTE are ledger lines, weighed against the "
                             "provider's charges; the clean run must book there (default: "
                             "LEDGER_TABLE:charge_id, judged if the clean run books there; none to skip)")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON (docs/check-report.schema.json), errors too")


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
                                     books=args.books, trigger=args.trigger)
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
