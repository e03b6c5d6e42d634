"""`python -m idem replay`: a captured event through the local runtime, as the function would."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..console import align, choose, fail

HELP = "run a captured event through the local runtime, as the function would"
#: The largest event Lambda hands a function (a synchronous invoke, as SQS uses; asynchronous
#: ones are at most 1 MB): https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html
MAX_EVENT_BYTES = 6 * 1024 * 1024


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("event", help="a JSON file holding the event (S3, EventBridge, or S3 "
                                      "inside SNS/SQS), or - for standard input")
    parser.add_argument("--handler", default="keyed", help="the handler pattern: naive, "
                        "claim_first, robust, keyed (default) or powertools")
    parser.add_argument("--deliveries", type=int, default=1, help="how many times S3 delivers it")
    parser.add_argument("--json", action="store_true",
                        help="print the outcome as a JSON object (errors too)")


def run(args: argparse.Namespace) -> int:
    from ..core.events import load_event
    from ..explore import replay as rp  # moto: loaded when the command runs, not for --help

    problem = choose("--handler", args.handler, rp.handler_names())
    if problem:
        return fail(problem)
    try:
        event = load_event(read_text(args.event))
    except (OSError, ValueError) as problem:  # EventError is a ValueError
        return fail(f"{args.event}: {problem}")
    report = rp.replay(event, handler=args.handler, deliveries=args.deliveries)
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(format_replay(report))
    if report.status != "rejected":
        return 0
    print(f"error: {args.event}: the function rejects this event: {report.reason}", file=sys.stderr)
    return 2


def read_text(source: str) -> str:
    """The event's text from a file or standard input (`-`), at most MAX_EVENT_BYTES.
    OSError or ValueError with a message that says what was wrong."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
        else:
            with open(source, "rb") as file:
                data = file.read(MAX_EVENT_BYTES + 1)
    except OSError as problem:
        raise OSError(f"cannot read it: {problem.strerror or problem}") from None
    if len(data) > MAX_EVENT_BYTES:
        raise ValueError(f"larger than {MAX_EVENT_BYTES // 2**20} MB, the most Lambda hands a function")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text; expected the JSON of an S3 event") from None


def format_replay(report: Any) -> str:
    """The replay as a human reads it: what happened, one row per object, what was skipped."""
    from ..core.events import EventBatch

    lines = [f"{report.handler}, {report.deliveries} deliver{'y' if report.deliveries == 1 else 'ies'}: "
             f"{report.status}" + (f" - {report.reason}" if report.reason else "")]
    if report.rows:
        lines.append(align([list(report.rows[0])] + [[str(v) for v in r.values()] for r in report.rows]))
    for _, line in EventBatch(skipped=report.skipped).log_lines(limit=10):
        lines.append(line)
    lines.append(f"{report.attempts} invocation{'s' if report.attempts != 1 else ''}, "
                 f"{report.failed_attempts} failed; failure queue: {report.dlq}")
    return "\n".join(lines)
