"""`python -m idem`: the scenario matrix, the charge-then-die case, replays, races, the check,
the benchmark, redrives, the runbook (settle, refund), the outage and the deploy demo.

One small module per command (`idem/cli/<command>.py`), each with `HELP`, `configure(parser)`
and `run(args)`. Building the parser imports only those modules, which import nothing but the
standard library and `idem.console` at the top: moto, pandas and the rest load inside `run`,
when that command runs, so `python -m idem --help` starts on a plain install.
Every command runs offline on moto unless it is told, with `--yes`, to talk to AWS.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, NoReturn, Sequence

from .. import console
from ..console import UsageError, fail

#: The commands, in the order `--help` lists them: name -> module.
COMMANDS = {name: f"idem.cli.{name}" for name in
            ("sim", "limits", "replay", "race", "check", "bench", "redrive", "settle", "refund", "customers", "outage",
             "deploy")}

#: The range each numeric option accepts, whichever command has it: small enough that a
#: 2-core machine stays responsive (a round of 64 threads, 2,000 events of a benchmark).
BOUNDS: dict[str, tuple[float, float]] = {
    "threads": (2, 64), "rounds": (1, 1000), "events": (1, 2000), "deliveries": (1, 10),
    "wait": (1, 3600), "workers": (1, 8),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; bad input is one line on stderr (and JSON under --json) and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    console.json_errors = "--json" in argv
    try:
        args = _parser().parse_args(argv)
    except UsageError as problem:
        if argv[:1] == ["check"]:  # the check's errors say "idem check: ...", its --json has a schema of its own
            from .check import refuse_usage

            return refuse_usage(str(problem), console.json_errors)
        return fail(str(problem))
    try:
        return args.run(args)
    except BrokenPipeError:  # `python -m idem sim --all | head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


class _Parser(argparse.ArgumentParser):
    """argparse, reporting bad input as an exception instead of usage text and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m idem", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=module.HELP)
        module.configure(sub)
        sub.set_defaults(run=module.run)
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
