"""`python -m idem sim`: the scenario matrix, the headline rows by default."""
from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

from ..console import align, choose, fail

HELP = "run the scenario matrix (the headline rows by default)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="every fault point, times and delivery")
    parser.add_argument("--handler", help="only this handler: naive, claim_first, robust, keyed "
                                          "or powertools")
    parser.add_argument("--fault", help="only this fault point: none, at_charge, after_charge, "
                                        "after_commit, or one of the provider's own outcomes: "
                                        "provider_down, provider_500, provider_409, declined")
    parser.add_argument("--times", help="only once, always, or - (no fault)")
    parser.add_argument("--delivery", help="only single, duplicate or concurrent")
    parser.add_argument("--provider", choices=("stand-in", "stripe"), default="stand-in",
                        help="what the function charges through: the provider stand-in (default), or "
                             "Stripe's own SDK (keyed_stripe.py) aimed at a loopback Stripe with the same rules")
    parser.add_argument("--json", action="store_true", help="print a JSON list of outcome rows")


def run(args: argparse.Namespace) -> int:
    from ..explore import scenarios as sc  # moto: loaded when the command runs, not for --help

    over_stripe = args.provider == "stripe"
    handlers = [args.handler] if args.handler else None
    problem = _filter_problem(args, sc.handler_names(), sc.all_scenarios(["keyed"], provider=True))
    if problem:
        return fail(problem)
    if over_stripe and args.handler == sc.POWERTOOLS:
        return fail("--provider stripe runs the workbook's own handlers (naive, claim_first, robust, keyed); "
                    "powertools charges through the stand-in only")
    if over_stripe and not handlers:  # powertools, if installed, charges through the stand-in only
        handlers = [h for h in sc.handler_names() if h != sc.POWERTOOLS]
    # The provider's own outcomes are asked for by name; --all alone keeps the matrix's rows.
    provider = args.fault in sc.PROVIDER_POINTS
    pool = (sc.all_scenarios(handlers, provider=provider) if args.all or provider
            else sc.headline_scenarios(handlers))
    chosen = sc.select(pool, fault=args.fault, times=args.times, delivery=args.delivery)
    if not chosen:
        return fail("no scenario matches those filters (times is '-' for fault none)")
    rows = [sc.run(s, over_stripe=over_stripe).row() for s in chosen]
    if args.json:
        print(json.dumps(rows, indent=1))
    elif args.all or args.handler:
        print(format_rows(rows))
    else:
        print(format_headline(rows))
    return 0


def _filter_problem(args: argparse.Namespace, handlers: Sequence[str], matrix: Sequence[Any]) -> str | None:
    """What is wrong with sim's filters, if anything: valid values come from the matrix."""
    def values(name: str) -> list[str]:
        return list(dict.fromkeys(getattr(s, name) for s in matrix))

    for problem in (choose("--handler", args.handler, handlers),
                    choose("--fault", args.fault, values("fault")),
                    choose("--times", args.times, values("times")),
                    choose("--delivery", args.delivery, values("delivery"))):
        if problem:
            return problem
    return None


def format_headline(rows: list[dict[str, Any]]) -> str:
    """Charges then verdict, one column per handler, as in the README."""
    handlers = list(dict.fromkeys(r["handler"] for r in rows))
    cells: dict[tuple[str, str], str] = {}
    labels: list[str] = []
    for r in rows:
        label = _label(r)
        if label not in labels:
            labels.append(label)
        cells[(label, r["handler"])] = f"{r['charges']} {r['verdict']}"
    table = [["fault, times"] + handlers] + [[lab] + [cells.get((lab, h), "") for h in handlers]
                                             for lab in labels]
    return align(table)


def _label(row: dict[str, Any]) -> str:
    if row["delivery"] != "single":
        return f"{row['fault']}, {row['delivery']} delivery"
    return row["fault"] if row["times"] == "-" else f"{row['fault']}, {row['times']}"


def format_rows(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    return align([columns] + [[str(r[c]) for c in columns] for r in rows])
