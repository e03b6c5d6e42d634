"""`python -m idem`: the scenario matrix, the charge-then-die case, replays and races.

Every command runs offline on moto. Only `deploy --target aws` ever talks to AWS.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

#: Commands that live in their own modules, loaded only when used: name -> module.
PLUGIN_COMMANDS = {"bench": "idem.local.bench", "deploy": "idem.deploy.command"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `python -m idem sim --all | head`
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m idem", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = commands.add_parser("sim", help="run the scenario matrix (the headline rows by default)")
    sim.add_argument("--all", action="store_true", help="every fault point, times and delivery")
    sim.add_argument("--handler", help="only this handler")
    sim.add_argument("--fault", help="only this fault point")
    sim.add_argument("--times", help="only once, always, or - (no fault)")
    sim.add_argument("--delivery", help="only single, duplicate or concurrent")
    sim.add_argument("--json", action="store_true", help="print a JSON list of outcome rows")
    sim.set_defaults(run=_sim)

    limits = commands.add_parser("limits", help="the charge-then-die case: robust vs keyed")
    limits.add_argument("--json", action="store_true")
    limits.set_defaults(run=_limits)

    replay = commands.add_parser("replay", help="run a captured S3 event through the local runtime")
    replay.add_argument("event", help="a JSON file holding the event, or - for standard input")
    replay.add_argument("--handler", default="keyed")
    replay.add_argument("--deliveries", type=int, default=1, help="how many times S3 delivers it")
    replay.add_argument("--json", action="store_true")
    replay.set_defaults(run=_replay)

    race = commands.add_parser("race", help="real threads racing for one conditional claim")
    race.add_argument("--threads", type=int, default=16)
    race.add_argument("--rounds", type=int, default=200)
    race.add_argument("--strategy", default="conditional_put",
                      choices=("conditional_put", "read_then_write", "naive", "claim_first", "robust",
                               "keyed"),
                      help="a bare claim, or a handler raced through its entry point")
    race.add_argument("--json", action="store_true")
    race.set_defaults(run=_race)

    for name, module in PLUGIN_COMMANDS.items():
        try:
            plugin = importlib.import_module(module)
        except ModuleNotFoundError as missing:
            if not (missing.name and module.startswith(missing.name)):
                raise
            continue  # not part of this checkout
        sub = commands.add_parser(name, help=plugin.HELP)
        plugin.configure(sub)
        sub.set_defaults(run=plugin.run)
    return parser


def fail(message: str) -> int:
    """One clear line on stderr, and the exit code for bad input."""
    print(f"error: {message}", file=sys.stderr)
    return 2


# -- sim -----------------------------------------------------------------------------------
def _sim(args: argparse.Namespace) -> int:
    from .local import scenarios as sc

    handlers = [args.handler] if args.handler else None
    if args.handler and args.handler not in sc.handler_names():
        return fail(f"unknown handler {args.handler!r}; choose from {', '.join(sc.handler_names())}")
    pool = sc.all_scenarios(handlers) if args.all else sc.headline_scenarios(handlers)
    chosen = sc.select(pool, fault=args.fault, times=args.times, delivery=args.delivery)
    if not chosen:
        return fail("no scenario matches those filters (times is '-' for fault none)")
    rows = [sc.run(s).row() for s in chosen]
    if args.json:
        print(json.dumps(rows, indent=1))
    elif args.all or args.handler:
        print(format_rows(rows))
    else:
        print(format_headline(rows))
    return 0


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
    return _align(table)


def _label(row: dict[str, Any]) -> str:
    if row["delivery"] != "single":
        return f"{row['fault']}, {row['delivery']} delivery"
    return row["fault"] if row["times"] == "-" else f"{row['fault']}, {row['times']}"


def format_rows(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    return _align([columns] + [[str(r[c]) for c in columns] for r in rows])


def _align(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- limits --------------------------------------------------------------------------------
def _limits(args: argparse.Namespace) -> int:
    from .local import scenarios as sc

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


# -- replay --------------------------------------------------------------------------------
def _replay(args: argparse.Namespace) -> int:
    from .core.events import EventError, load_event, read_event
    from .local import replay as rp

    try:
        text = sys.stdin.read() if args.event == "-" else Path(args.event).read_text(encoding="utf-8")
    except OSError as problem:
        return fail(f"cannot read {args.event}: {problem.strerror}")
    except UnicodeDecodeError:
        return fail(f"{args.event} is not UTF-8 text; expected the JSON of an S3 event")
    try:
        event = load_event(text)
        batch = read_event(event)
    except EventError as problem:
        return fail(f"{args.event}: {problem}")
    if batch.test_event:
        print("s3:TestEvent: S3 sends this when a bucket's notifications are configured. "
              "There is nothing to process; a handler should ignore it.")
        return 0
    if batch.malformed:
        first = batch.malformed[0]
        return fail(f"{args.event}: record {first.index}: {first.reason}")
    if not batch.objects:
        return fail(f"{args.event}: no ObjectCreated record to replay "
                    f"({'; '.join(s.reason for s in batch.skipped)})")
    if args.deliveries < 1:
        return fail("--deliveries must be 1 or more")
    try:
        results = rp.replay(event, handler=args.handler, deliveries=args.deliveries)
    except ValueError as problem:
        return fail(str(problem))
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(format_rows(results))
    return 0


# -- race ----------------------------------------------------------------------------------
def _race(args: argparse.Namespace) -> int:
    from .local.race import race

    if args.threads < 2 or args.rounds < 1:
        return fail("a race needs --threads 2 or more and --rounds 1 or more")
    report = race(args.threads, args.rounds, args.strategy)
    if args.json:
        print(json.dumps({"strategy": report.strategy, "threads": report.threads,
                          "rounds": report.rounds, "clean_rounds": report.clean_rounds,
                          "most_winners": max(report.winners_per_round)}))
    else:
        print(report.summary())
    clean = report.clean_rounds == report.rounds
    return 0 if clean or args.strategy not in ("conditional_put", "claim_first", "keyed") else 1
