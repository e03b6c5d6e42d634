"""`python -m idem bench`: calls, billed units and events per second for each handler."""
from __future__ import annotations

import argparse
import json

from ..console import fail

HELP = "calls per event and events per second for each handler, side by side"
#: `idem.cost.bench.HANDLERS`, without importing moto for --help.
HANDLERS = ("naive", "claim_first", "robust", "keyed", "keyed_stripe", "powertools")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=200,
                        help="first deliveries (and as many duplicates) per handler")
    parser.add_argument("--rounds", type=int, default=5,
                        help="slices the handlers take turns on; the best slice's rate counts")
    parser.add_argument("--handler", action="append", choices=HANDLERS,
                        help="only these handlers (repeatable; keyed is always measured)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip timing idem check on keyed (every schedule, 2 processes, 10-60 s)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args: argparse.Namespace) -> int:
    from ..cost import bench  # moto: loaded when the command runs, not for --help

    if args.events < 1 or not 1 <= args.rounds <= args.events:
        return fail("--events must be 1 or more and --rounds between 1 and --events")
    handlers = tuple(h for h in HANDLERS if not args.handler or h in args.handler or h == "keyed")
    report = bench.measure(args.events, args.rounds, handlers, check=not args.no_check)
    print(json.dumps(report, indent=1) if args.json else bench.format_report(report))
    return 0


