"""`python -m idem`: the scenario matrix, the charge-then-die case, replays and races.

Every command runs offline on moto. Only `deploy --target aws` ever talks to AWS.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Callable, NoReturn, Sequence

from .core.errors import IdemError

#: Commands that live in their own modules, loaded only when used: name -> module.
PLUGIN_COMMANDS = {"check": "idem.check", "bench": "idem.local.bench", "deploy": "idem.deploy.command",
                   "redrive": "idem.local.redrive"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; bad input is one line on stderr (and JSON under --json) and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    global _json_errors
    _json_errors = "--json" in argv
    try:
        args = _parser().parse_args(argv)
    except UsageError as problem:
        return fail(str(problem))
    try:
        return args.run(args)
    except BrokenPipeError:  # `python -m idem sim --all | head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


class UsageError(IdemError):
    """The command line itself is wrong: an unknown option or choice, a number out of range."""


class _Parser(argparse.ArgumentParser):
    """argparse, reporting bad input as an exception instead of usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


#: The range each numeric option accepts, whichever command has it: small enough that a
#: 2-core machine stays responsive (a round of 64 threads, 2,000 events of a benchmark).
BOUNDS: dict[str, tuple[float, float]] = {
    "threads": (2, 64), "rounds": (1, 1000), "events": (1, 2000), "deliveries": (1, 10),
    "wait": (1, 3600), "workers": (1, 8),
}


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m idem", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = commands.add_parser("sim", help="run the scenario matrix (the headline rows by default)")
    sim.add_argument("--all", action="store_true", help="every fault point, times and delivery")
    sim.add_argument("--handler", help="only this handler: naive, claim_first, robust, keyed "
                                       "or powertools")
    sim.add_argument("--fault", help="only this fault point: none, at_charge, after_charge, "
                                     "after_commit, or one of the provider's own outcomes: "
                                     "provider_down, provider_500, provider_409, declined")
    sim.add_argument("--times", help="only once, always, or - (no fault)")
    sim.add_argument("--delivery", help="only single, duplicate or concurrent")
    sim.add_argument("--json", action="store_true", help="print a JSON list of outcome rows")
    sim.set_defaults(run=_sim)

    limits = commands.add_parser("limits", help="the charge-then-die case: robust vs keyed")
    limits.add_argument("--json", action="store_true", help="print the two outcome rows as JSON")
    limits.set_defaults(run=_limits)

    replay = commands.add_parser("replay", help="run a captured event through the local runtime, "
                                                "as the function would")
    replay.add_argument("event", help="a JSON file holding the event (S3, EventBridge, or S3 "
                                      "inside SNS/SQS), or - for standard input")
    replay.add_argument("--handler", default="keyed", help="the handler pattern: naive, "
                        "claim_first, robust, keyed (default) or powertools")
    replay.add_argument("--deliveries", type=int, default=1, help="how many times S3 delivers it")
    replay.add_argument("--json", action="store_true",
                        help="print the outcome as a JSON object (errors too)")
    replay.set_defaults(run=_replay)

    race = commands.add_parser("race", help="real threads racing for one conditional claim")
    race.add_argument("--threads", type=int, default=16, help="threads racing each round")
    race.add_argument("--rounds", type=int, default=200, help="rounds to race")
    race.add_argument("--strategy", default="conditional_put",
                      choices=("conditional_put", "read_then_write", "naive", "claim_first", "robust",
                               "keyed"),
                      help="a bare claim, or a handler raced through its entry point")
    race.add_argument("--json", action="store_true", help="print the report as JSON")
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
    for sub in commands.choices.values():
        _bound_numbers(sub)
    return parser


def _bound_numbers(parser: argparse.ArgumentParser) -> None:
    """Give every numeric option named in BOUNDS its range: checked, and said in its help."""
    for action in parser._actions:  # argparse has no public way to walk a parser's options
        if action.dest in BOUNDS and action.type in (int, float) and action.option_strings:
            low, high = BOUNDS[action.dest]
            action.type = _in_range(action.option_strings[0], action.type, low, high)
            action.help = f"{action.help or action.dest} ({low:g} to {high:g})"


def _in_range(option: str, kind: type, low: float, high: float) -> Callable[[str], Any]:
    """An argparse type: a number of `kind` from `low` to `high`, else a UsageError."""
    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise UsageError(f"{option} takes a number, got {text!r}") from None
        if not low <= value <= high:
            raise UsageError(f"{option} must be {low:g} or more and at most {high:g}; got {text}")
        return value
    convert.__name__ = kind.__name__
    return convert


_json_errors = False  # this run asked for --json: errors are printed as JSON too


def fail(message: str) -> int:
    """One clear line on stderr (and a JSON object on stdout under --json); exit code 2."""
    if _json_errors:
        print(json.dumps({"error": message}))
    print(f"error: {message}", file=sys.stderr)
    return 2


def choose(option: str, value: str | None, valid: Sequence[str]) -> str | None:
    """An error message when `value` is given and is not one of `valid`, else None."""
    if value is None or value in valid:
        return None
    return f"unknown {option} {value!r}; choose from {', '.join(valid)}"


# -- sim -----------------------------------------------------------------------------------
def _sim(args: argparse.Namespace) -> int:
    from .local import scenarios as sc

    handlers = [args.handler] if args.handler else None
    problem = _sim_filter_problem(args, sc.handler_names(), sc.all_scenarios(["keyed"], provider=True))
    if problem:
        return fail(problem)
    # The provider's own outcomes are asked for by name; --all alone keeps the matrix's rows.
    provider = args.fault in sc.PROVIDER_POINTS
    pool = (sc.all_scenarios(handlers, provider=provider) if args.all or provider
            else sc.headline_scenarios(handlers))
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


def _sim_filter_problem(args: argparse.Namespace, handlers: Sequence[str],
                        matrix: Sequence[Any]) -> str | None:
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
#: The largest event Lambda hands a function (a synchronous invoke, as SQS uses; asynchronous
#: ones are at most 1 MB): https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html
MAX_EVENT_BYTES = 6 * 1024 * 1024


def _replay(args: argparse.Namespace) -> int:
    from .core.events import load_event
    from .local import replay as rp

    problem = choose("--handler", args.handler, rp.handler_names())
    if problem:
        return fail(problem)
    try:
        event = load_event(_read_text(args.event))
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


def _read_text(source: str) -> str:
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
    from .core.events import EventBatch

    lines = [f"{report.handler}, {report.deliveries} deliver{'y' if report.deliveries == 1 else 'ies'}: "
             f"{report.status}" + (f" - {report.reason}" if report.reason else "")]
    if report.rows:
        lines.append(_align([list(report.rows[0])] + [[str(v) for v in r.values()] for r in report.rows]))
    for _, line in EventBatch(skipped=report.skipped).log_lines(limit=10):
        lines.append(line)
    lines.append(f"{report.attempts} invocation{'s' if report.attempts != 1 else ''}, "
                 f"{report.failed_attempts} failed; failure queue: {report.dlq}")
    return "\n".join(lines)


# -- race ----------------------------------------------------------------------------------
def _race(args: argparse.Namespace) -> int:
    from .local.race import race

    report = race(args.threads, args.rounds, args.strategy)
    if args.json:
        print(json.dumps({"strategy": report.strategy, "threads": report.threads,
                          "rounds": report.rounds, "clean_rounds": report.clean_rounds,
                          "most_winners": max(report.winners_per_round)}))
    else:
        print(report.summary())
    clean = report.clean_rounds == report.rounds
    return 0 if clean or args.strategy not in ("conditional_put", "claim_first", "keyed") else 1
