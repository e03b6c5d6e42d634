"""The README's table of `idem check` exit codes is the contract: every case it names is a handler in
tests/handlers/ that, run through the CLI, exits with its row's code, in one line on stderr for 2 and 3;
and every bad input of the suite (each handler whose tests expect exit 2 or 3) is in the table."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from check_cli import FAST, cli, target
from idem.explore.families.build import DIMENSIONS

README = Path(__file__).parent.parent / "README.md"
#: What a case needs beyond FAST: the environment that bounds it in seconds (the CLI's test knobs).
#: loud_lines proves the output contract (50 MB printed per invocation, kept to its last lines, and
#: the exit code in one line whatever the output), not the handler: the families of time and
#: accounts are its schedules (every attempt failing and redriven, copies, another account, names
#: to decode: about 40, each printing 50 MB per invocation), not the 400 of the faults family
#: (tests/test_check_sandbox.py runs a 50 MB dump through every family).
BOUNDS = {"own_alarm": {"IDEM_CHECK_STALL_SECONDS": "15"}, "waits_for_the_clock": {"IDEM_CHECK_SCHEDULE_SECONDS": "1"},
          "loud_lines": {"IDEM_CHECK_FAMILIES": "late,again,accounts,names"}}
#: Every bad input in the suite: the handlers whose tests say exit 2 or 3.
BAD_INPUTS = {"import_error": 2, "syntax_error": 2, "not_callable": 2, "one_argument": 2, "async_handler": 2,
              "generator_handler": 2, "needs_secret": 2, "reads_setting_at_import": 2, "json_orders": 2, "sns_notifier": 2,
              "stripe_charges_api": 2, "shadows_responses": 2, "partiql_decimal_literal": 2,
              "exits": 3, "os_exit": 3, "leaves_a_thread": 3, "own_alarm": 3, "waits_for_the_clock": 3,
              "calls_the_internet": 3, "starts_subprocess": 3, "split_syntax": 2, "exits_on_import": 3,
              "raises_keyboard_interrupt": 3, "interrupted_on_import": 3}


def readme_table() -> dict[str, int]:
    """Each case the README's exit-code table names, with its row's code."""
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([0-3]) \| [^|]+ \| (.+) \|$", text, flags=re.M)
    assert {code for code, _ in rows} == {"0", "1", "2", "3"}, "the README's exit-code table is gone"
    return {name: int(code) for code, cases in rows for name in re.findall(r"`([a-z_]+)`", cases)
            if case_target(name)}


def case_target(name: str) -> str:
    """The CLI's target for a case: tests/handlers/NAME.py, or NAME/app.py (a handler with its own modules)."""
    folder = Path(__file__).parent / "handlers"
    if (folder / f"{name}.py").is_file():
        return target(name)
    return f"{folder / name / 'app.py'}:lambda_handler" if (folder / name / "app.py").is_file() else ""


def test_every_bad_input_of_the_suite_is_in_the_readme_table_with_its_code():
    table = readme_table()
    assert {n: c for n, c in table.items() if c >= 2} == BAD_INPUTS


@pytest.mark.parametrize("name, code", sorted(readme_table().items()))
def test_each_case_in_the_readme_table_exits_with_its_code(name, code, monkeypatch):
    for variable, value in BOUNDS.get(name, {}).items():
        monkeypatch.setenv(variable, value)
    started = time.monotonic()
    got, out, err = cli(case_target(name), *FAST)
    assert got == code, (out + err)[-2000:]
    if code >= 2:  # one line, "idem check: ...", after the handler's own traceback where it has one
        lines = err.strip().splitlines()
        assert lines[-1].startswith("idem check: "), err[-2000:]
        assert len(lines) == 1 or "the handler's own traceback" in lines[0], err[-2000:]
    else:
        assert ("holds: " if code == 0 else "breaks ") in out
    assert time.monotonic() - started < 300


def test_the_families_knob_runs_only_the_named_families_and_refuses_an_unknown_one(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "late,names")
    got, out, err = cli(target("keyed_books"), *FAST)
    assert got == 0, (out + err)[-2000:]
    header = out.splitlines()[0]
    assert "12 schedules (0 faults, 0 overwrite, 0 slow, 9 late, " in header and "3 names)" in header, header
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "late,nope")
    got, out, err = cli(target("keyed_books"), *FAST)
    assert got == 2 and err.strip().splitlines() == [
        f"idem check: IDEM_CHECK_FAMILIES: nope is not a family of schedules; the families: {', '.join(DIMENSIONS)}"]


def test_a_function_module_named_as_a_package_the_check_runs_on_is_named_with_what_to_do():
    got, _, err = cli(case_target("shadows_responses"), *FAST)
    assert got == 2 and "its own module named as a package the check itself runs on: responses" in err, err
    assert "Rename the function's module" in err and "bug in idem" not in err


def test_a_vendored_package_is_not_taken_for_the_function_s_own_module(tmp_path):
    from idem.explore.target.dependencies import shadowing

    (tmp_path / "app.py").write_text("")
    (tmp_path / "responses.py").write_text("")  # its own: named
    (tmp_path / "yaml").mkdir()
    (tmp_path / "yaml" / "__init__.py").write_text("")  # pip install -t .: its dist-info names it
    (tmp_path / "PyYAML-6.0.dist-info").mkdir()
    (tmp_path / "PyYAML-6.0.dist-info" / "top_level.txt").write_text("_yaml\nyaml\n")
    assert [name for name, _ in shadowing(str(tmp_path))] == ["responses"]


def test_a_handler_s_binding_is_judged_again_when_its_defaults_change():
    """Each cold start loads the handler afresh, so whether it binds (event, context) is kept per
    code object; the same code with other defaults (or a wrapper) must still be judged on its own."""
    import types

    from idem.sim.runtime.handler_guard import callable_problem

    module = types.ModuleType("team_handler")
    exec("def handler(event, context, retries): return event\n", module.__dict__)
    assert "missing a required argument: 'retries'" in callable_problem(module, "handler")
    module.handler.__defaults__ = (3,)  # the same code, now callable with two arguments
    assert callable_problem(module, "handler") == ""
    module.handler.__defaults__ = None
    assert "retries" in callable_problem(module, "handler")
    module.handler.__signature__ = __import__("inspect").signature(lambda event, context: None)
    assert callable_problem(module, "handler") == ""
