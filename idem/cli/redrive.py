"""`python -m idem redrive`: re-send what sits in the failure queue."""
from __future__ import annotations

import json
from typing import Any

from ..console import fail

HELP = "re-send what sits in the failure queue (locally: the 25-hour story, naive and with the lookup)"




def configure(parser: Any) -> None:
    parser.add_argument("--after", type=float, default=25.0,
                        help="hours between the failure and the redrive (default 25, past a day)")
    parser.add_argument("--fresh", action="store_true",
                        help="redrive as naive code does: a new event, stamped now (hides its age)")
    parser.add_argument("--queue-url", help="redrive this real queue (chapter 09's stack) instead")
    parser.add_argument("--function", help="with --queue-url: the function to send the events to")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")


def run(args: Any) -> int:
    import boto3

    from ..explore import redrive  # moto: loaded when the command runs, not for --help

    if args.queue_url or args.function:
        if not (args.queue_url and args.function):
            return fail("--queue-url and --function go together: the queue to empty, the function to send to")
        sent = redrive.redrive_to_lambda(boto3.client("sqs"), args.queue_url, boto3.client("lambda"), args.function)
        print(json.dumps({"redriven": sent}) if args.json else f"redriven {sent} event(s) to {args.function}")
        return 0
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


