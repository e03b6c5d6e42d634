"""`python -m idem bench`: calls, billed units and events per second for each handler."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..console import fail
from ..deploy import throughput

HELP = ("calls per event and events per second for each handler, side by side; uploads per second per "
        "unit of concurrency and the copies Stripe's rate limits allow")
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


def handler_seconds(report: dict[str, Any]) -> float:
    """The production handler's own time per first delivery, measured: keyed over Stripe's SDK
    (the loopback Stripe answering) when it ran, else keyed."""
    rates = {c["handler"]: c["rate_first"] for c in report["handlers"]}
    return 1.0 / (rates.get("keyed_stripe") or rates["keyed"])


def run(args: argparse.Namespace) -> int:
    from ..cost import bench  # moto: loaded when the command runs, not for --help

    if args.events < 1 or not 1 <= args.rounds <= args.events:
        return fail("--events must be 1 or more and --rounds between 1 and --events")
    handlers = tuple(h for h in HANDLERS if not args.handler or h in args.handler or h == "keyed")
    report = bench.measure(args.events, args.rounds, handlers, check=not args.no_check)
    report["throughput"] = throughput.report(handler_seconds(report))
    print(json.dumps(report, indent=1) if args.json else
          bench.format_report(report) + "\n" + throughput.format_report(report["throughput"]))
    return 0


