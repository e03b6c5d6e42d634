"""`python -m idem race`: real threads racing for one conditional claim."""
from __future__ import annotations

import argparse
import json

HELP = "real threads racing for one conditional claim"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=16, help="threads racing each round")
    parser.add_argument("--rounds", type=int, default=200, help="rounds to race")
    parser.add_argument("--strategy", default="conditional_put",
                        choices=("conditional_put", "read_then_write", "naive", "claim_first", "robust",
                                 "keyed"),
                        help="a bare claim, or a handler raced through its entry point")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from ..explore.race import race  # moto: loaded when the command runs, not for --help

    report = race(args.threads, args.rounds, args.strategy)
    if args.json:
        print(json.dumps({"strategy": report.strategy, "threads": report.threads,
                          "rounds": report.rounds, "clean_rounds": report.clean_rounds,
                          "most_winners": max(report.winners_per_round)}))
    else:
        print(report.summary())
    clean = report.clean_rounds == report.rounds
    return 0 if clean or args.strategy not in ("conditional_put", "claim_first", "keyed") else 1
