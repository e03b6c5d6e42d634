"""`python -m idem limits`: the charge-then-die case, robust against keyed."""
from __future__ import annotations

import argparse
import json

HELP = "the charge-then-die case: robust vs keyed"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the two outcome rows as JSON")


def run(args: argparse.Namespace) -> int:
    from ..explore import scenarios as sc  # moto: loaded when the command runs, not for --help

    rows = [sc.run(sc.Scenario(h, "after_charge", "once")).row() for h in ("robust", "keyed")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("The function dies after the provider charged and before its own commit;"
          " Lambda retries it a minute later.\n")
    for r in rows:
        print(f"  {r['handler']:<7} {r['charges']} charge{'s' if r['charges'] != 1 else ''}"
              f"  ({r['verdict']}, {r['attempts']} attempts, record {r['record']})")
    print("\nrobust's retry finds in_progress and charges again; keyed passes its key to the"
          "\nprovider, which replays the first charge instead of making a second.")
    return 0
