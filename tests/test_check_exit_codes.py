"""The README's table of `idem check` exit codes is the contract: every case it names is a handler in
tests/handlers/ that, run through the CLI, exits with its row's code, in one line on stderr for 2 and 3;
and every bad input of the suite (each handler whose tests expect exit 2 or 3) is in the table."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from check_cli import FAST, cli, target

README = Path(__file__).parent.parent / "README.md"
#: What a case needs beyond FAST: the environment that bounds it in seconds (the CLI's test knobs).
BOUNDS = {"own_alarm": {"IDEM_CHECK_STALL_SECONDS": "15"}, "waits_for_the_clock": {"IDEM_CHECK_SCHEDULE_SECONDS": "1"}}
#: Every bad input in the suite: the handlers whose tests say exit 2 or 3.
BAD_INPUTS = {"import_error": 2, "syntax_error": 2, "not_callable": 2, "one_argument": 2, "async_handler": 2,
              "generator_handler": 2, "needs_secret": 2, "json_orders": 2, "sns_notifier": 2,
              "exits": 3, "os_exit": 3, "leaves_a_thread": 3, "own_alarm": 3, "waits_for_the_clock": 3,
              "calls_the_internet": 3, "starts_subprocess": 3}


def readme_table() -> dict[str, int]:
    """Each case the README's exit-code table names, with its row's code."""
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([0-3]) \| [^|]+ \| (.+) \|$", text, flags=re.M)
    assert {code for code, _ in rows} == {"0", "1", "2", "3"}, "the README's exit-code table is gone"
    return {name: int(code) for code, cases in rows for name in re.findall(r"`([a-z_]+)`", cases)
            if (Path(__file__).parent / "handlers" / f"{name}.py").is_file()}


def test_every_bad_input_of_the_suite_is_in_the_readme_table_with_its_code():
    table = readme_table()
    assert {n: c for n, c in table.items() if c >= 2} == BAD_INPUTS


@pytest.mark.parametrize("name, code", sorted(readme_table().items()))
def test_each_case_in_the_readme_table_exits_with_its_code(name, code, monkeypatch):
    for variable, value in BOUNDS.get(name, {}).items():
        monkeypatch.setenv(variable, value)
    started = time.monotonic()
    got, out, err = cli(target(name), *FAST)
    assert got == code, (out + err)[-2000:]
    if code >= 2:  # one line, "idem check: ...", after the handler's own traceback where it has one
        lines = err.strip().splitlines()
        assert lines[-1].startswith("idem check: "), err[-2000:]
        assert len(lines) == 1 or "the handler's own traceback" in lines[0], err[-2000:]
    else:
        assert ("holds: " if code == 0 else "breaks ") in out
    assert time.monotonic() - started < 300
