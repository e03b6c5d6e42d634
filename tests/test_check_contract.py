"""The CLI's contract on what the reader gives it and what the handler does outside its verdicts
(README, "Check your own handler": exit 2 bad input, 3 the check could not finish, each error in one
line on stderr saying what was wrong and what to do, `--json` always JSON), held against the cases an
adversarial review found broken: a template that is not UTF-8 text, a handler the target's search
missed, a handler that raises KeyboardInterrupt or closes sys.stdout, a result Lambda cannot encode,
a books table that is nowhere, a provider factory that is not there, hints that did not fit.

Each test is a bad input or a clean run that fails (1-3 s), never a full check that holds."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from check_cli import FAST, HANDLERS, cli, target

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text())


def one_line(code: int, err: str, expected: int) -> str:
    """The error's one line (after the handler's own traceback, where it has one), checked."""
    assert code == expected, err[-2000:]
    lines = err.strip().splitlines()
    assert lines[-1].startswith("idem check: "), err[-2000:]
    assert len(lines) == 1 or lines[0] == "the handler's own traceback:", err[-2000:]
    assert "bug in idem" not in err, err[-2000:]
    return lines[-1]


def as_json(out: str, expected: int) -> str:
    """The --json answer's error, checked against the schema and for one line."""
    answer = json.loads(out)
    jsonschema.validate(answer, SCHEMA)
    assert answer["exit_code"] == expected and "\n" not in answer["error"], answer
    return str(answer["error"])


# -- 1. a template the check cannot read ----------------------------------------------------------
@pytest.mark.parametrize("content, says", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),  # a binary file
    ('Description: "Caf\xe9 uploads"\nResources: {}\n'.encode("latin-1"), "not UTF-8 text"),  # saved as latin-1
    (b"", "the file is empty"),
    (b"- a\n- b\n", "not a mapping"),
    (b"just: [unclosed\n", "line 2, column 1"),  # yaml's problem and its mark, not its multi-line rendering
    (b'"""a Python file"""\nimport os\n', "line 1, column 3"),
])
def test_a_template_the_check_cannot_read_is_exit_2_in_one_line(tmp_path, content, says):
    template = tmp_path / "template.yaml"
    template.write_bytes(content)
    code, out, err = cli("--template", str(template), "--function", "Fn", *FAST)
    line = one_line(code, err, 2)
    assert says in line, line
    if says == "not UTF-8 text":
        assert "save it as UTF-8" in line, line
    if says in ("the file is empty", "not a mapping"):
        assert "a mapping of sections such as Resources" in line, line
    code, out, err = cli("--template", str(template), "--function", "Fn", "--json", *FAST)
    assert code == 2 and says in as_json(out, 2)


# -- 2. the handler is found among the names its module binds, its source read as Python reads it -----
@pytest.mark.parametrize("source", [
    "def lambda_handler (event, context):\n    return 1\n",  # a space before the parenthesis
    "def _h(event, context):\n    return 1\nlambda_handler=_h\n",
    "def _h(event, context):\n    return 1\nlambda_handler, other = _h, None\n",
    "from typing import Callable\ndef _h(event, context):\n    return 1\nlambda_handler: Callable = _h\n",
    "from json import dumps as lambda_handler\n",
    "import json as lambda_handler\n",
    "class lambda_handler:\n    pass\n",
    "async def lambda_handler(event, context):\n    return 1\n",
    "def setup():\n    global lambda_handler\n    lambda_handler = print\nsetup()\n",
    "try:\n    from fast import lambda_handler\nexcept ImportError:\n    from slow import lambda_handler\n",
    "from os.path import *\n",  # anything: the load says
    "def lambda_handler(event, context:\n",  # does not parse: the load says
])
def test_a_module_binding_the_name_in_any_form_is_not_refused_before_it_loads(tmp_path, source):
    from idem.explore.target.target import resolve

    (tmp_path / "app.py").write_text(source)
    assert resolve(f"{tmp_path / 'app.py'}:lambda_handler").function == "lambda_handler"


@pytest.mark.parametrize("source", ["def handler(event, context):\n    return 1\n",
                                    "def f():\n    lambda_handler = 1\n",  # a local, not the module's
                                    "lambda_handler_v2 = print\n", ""])
def test_a_module_that_binds_no_such_name_is_refused_saying_so(tmp_path, source):
    from idem.explore.errors import CheckInputError
    from idem.explore.target.target import resolve

    (tmp_path / "app.py").write_text(source)
    with pytest.raises(CheckInputError, match="defines no lambda_handler"):
        resolve(f"{tmp_path / 'app.py'}:lambda_handler")


def test_a_reexported_handler_is_found_and_judged(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "late")  # S3's copies: a second charge without a key
    code, out, err = cli(f"{HANDLERS / 'reexported' / 'app.py'}:lambda_handler", *FAST)
    assert code == 1 and "double_charge" in out, (out + err)[-2000:]


LATIN1 = b"# -*- coding: latin-1 -*-\n# Caf\xe9: the team's own comment, saved in latin-1\n"


def test_a_latin1_source_with_its_coding_line_is_read_as_python_reads_it(tmp_path):
    app = tmp_path / "app.py"
    app.write_bytes(LATIN1 + b"async def lambda_handler(event, context):\n    return 1\n")
    code, out, err = cli(f"{app}:lambda_handler", *FAST)  # its shape read from the source: an async def
    assert "is an async def" in one_line(code, err, 2)
    app.write_bytes(LATIN1 + b"def lambda_handler(event, context):\n    raise ValueError('caf\xe9 closed')\n")
    code, out, err = cli(f"{app}:lambda_handler", *FAST)  # loaded and run: its clean run fails
    assert code == 1 and "ValueError: caf\u00e9 closed" in out, (out + err)[-2000:]


# -- 3. a BaseException that is not an Exception ends Lambda's runtime, as sys.exit does ------------
@pytest.mark.parametrize("name, where", [("raises_keyboard_interrupt", "on delivery 1, attempt 1"),
                                         ("interrupted_on_import", "at import")])
def test_a_keyboard_interrupt_of_the_handler_is_exit_3_naming_it_and_where(name, where):
    code, out, err = cli(target(name), *FAST)
    line = one_line(code, err, 3)
    assert "the handler raised KeyboardInterrupt" in line and where in line, line
    assert "catches only Exception" in line and "raise an exception" in line, line
    code, out, err = cli(target(name), *FAST, "--json")
    assert "KeyboardInterrupt" in as_json(out, 3)


# -- 4. a handler that closes sys.stdout ---------------------------------------------------------
def test_a_closed_log_tail_keeps_what_was_printed_and_refuses_the_handler_s_own_writes():
    from idem.sim.runtime.logtail import LogTail

    printed = LogTail()
    printed.write("charging for order-1\n")
    printed.close()
    with pytest.raises(ValueError, match="closed file"):
        printed.write("charged\n")
    assert printed.lines() == ["charging for order-1"] and printed.written == len("charging for order-1\n")


def test_a_handler_that_closes_stdout_breaks_on_its_own_print_after_it():
    code, out, err = cli(target("closes_stdout"), *FAST)
    assert code == 1 and "bug in idem" not in out + err, (out + err)[-2000:]
    assert "the clean run fails, before any fault: ValueError: I/O operation on closed file" in out, out[-2000:]
    assert "charging for " in out, out[-2000:]  # what it printed before closing


# -- 5. a result Lambda's runtime cannot encode ---------------------------------------------------
def test_lambda_s_runtime_encodes_json_decimal_and_bytes_and_nothing_else():
    from decimal import Decimal

    from idem.sim.runtime.local_lambda import marshal_error

    assert [marshal_error(r) for r in (None, {"n": Decimal("12.50")}, b"\x89raw", [1, "a", None])] == ["", "", "", ""]
    assert marshal_error({"ok": True, "at": object()}) == "Object of type object is not JSON serializable"
    assert marshal_error({1, 2}) == "Object of type set is not JSON serializable"


def test_a_handler_returning_what_lambda_cannot_encode_fails_every_invocation():
    code, out, err = cli(target("returns_a_datetime"), *FAST)
    assert code == 1, (out + err)[-2000:]
    assert ("the clean run fails, before any fault: Runtime.MarshalError: Unable to marshal response: "
            "Object of type datetime is not JSON serializable") in out, out[-2000:]


# -- 6. a books table the check's AWS does not have -----------------------------------------------
def test_a_books_table_named_by_a_setting_and_made_nowhere_is_exit_2_saying_what_to_do():
    code, out, err = cli(target("keyed_books"), "--env", "LEDGER_TABLE=prod-ledger", *FAST)
    line = one_line(code, err, 2)
    assert "LEDGER_TABLE=prod-ledger" in line and "does not have" in line, line
    assert "leave LEDGER_TABLE to the check" in line and "--setup or --template" in line and "--books none" in line
    code, out, err = cli(target("keyed_books"), "--env", "LEDGER_TABLE=prod-ledger", "--json", *FAST)
    assert "prod-ledger" in as_json(out, 2)


# -- 7. a provider factory named and not there ---------------------------------------------------
def test_a_provider_factory_named_that_the_module_lacks_is_exit_2_naming_it():
    code, out, err = cli(target("keyed_books"), "--provider-factory", "build_client", *FAST)
    line = one_line(code, err, 2)
    assert "--provider-factory build_client: keyed_books.py has no build_client" in line, line
    assert "the check replaces this" not in out + err


def test_the_default_provider_factory_missing_is_no_refusal_and_the_workbook_s_patterns_are_wired(tmp_path):
    from idem.sim.runtime.local_lambda import LocalLambda
    from idem.sim.world import LocalWorld

    app = tmp_path / "no_factory.py"  # charges with Stripe's SDK itself, say: no factory to replace
    app.write_text("def lambda_handler(event, context):\n    return {'ok': True}\n")
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env(), retries=0, handler=f"{app}:lambda_handler")
        runtime.send({"Records": []})
        assert [a.outcome for a in runtime.run()] == ["ok"]
        wired = LocalLambda(world, world.env(), retries=0, provider_factory="build_client")  # idem.core.entry
        assert wired.wired and wired._acquire()[1]


# -- 8. what to do, where the error says it ------------------------------------------------------
def test_a_setting_read_at_import_and_not_given_is_named_with_its_env_option():
    code, out, err = cli(target("reads_setting_at_import"), *FAST)
    line = one_line(code, err, 2)
    assert "KeyError: 'ORDERS_TABLE'" in line and "pass it with --env ORDERS_TABLE=VALUE" in line, line


@pytest.mark.parametrize("body, says, not_says", [
    ("def lambda_handler(event, context):\n    return lambda_handler(event, context)\n", "RecursionError", "--env"),
    ("def lambda_handler(event, context):\n    return open('config.json').read()\n", "FileNotFoundError", "--env"),
    ("import os\ndef lambda_handler(event, context):\n    return os.environ['ORDERS_TABLE']\n",
     "pass it with --env ORDERS_TABLE=VALUE", "--trigger"),  # a setting read in the invocation: exit 2 says it
])
def test_a_failing_clean_run_gets_the_env_hint_only_where_it_fits(tmp_path, body, says, not_says):
    app = tmp_path / "app.py"
    app.write_text(body)
    code, out, err = cli(f"{app}:lambda_handler", *FAST)
    assert code in (1, 2) and says in out + err and not_says not in out + err, (out + err)[-2000:]


def test_an_s3_handler_fed_sqs_messages_is_told_to_check_its_trigger():
    code, out, err = cli(target("keyed_books"), "--trigger", "sqs", *FAST)
    assert code == 1, (out + err)[-2000:]
    assert "KeyError: 's3'. The handler could not read the event the check sent (--trigger sqs" in out, out[-2000:]
    assert "Check --trigger" in out and "--env" not in out, out[-2000:]


# -- 9. every error in one line, saying what to do -------------------------------------------------
def test_an_exception_at_import_whose_message_has_line_breaks_is_one_line(tmp_path):
    app = tmp_path / "app.py"
    app.write_text('raise RuntimeError("config invalid:\\n  - LEDGER_TABLE missing\\n  - BUCKET missing")\n'
                   "def lambda_handler(event, context):\n    pass\n")
    code, out, err = cli(f"{app}:lambda_handler", *FAST)
    line = one_line(code, err, 2)
    assert line.endswith("RuntimeError: config invalid: - LEDGER_TABLE missing - BUCKET missing"), line
    code, out, err = cli(f"{app}:lambda_handler", *FAST, "--json")
    assert "config invalid: - LEDGER_TABLE missing" in as_json(out, 2)


def test_a_check_past_its_budget_asks_for_a_larger_one_and_does_not_say_the_handler_hangs():
    from idem.explore.sandbox.parent import _Notes, _what_happened

    notes = _Notes.__new__(_Notes)
    notes.notes = []
    said = _what_happened("budget", None, notes, 90.0, 1.0, [])
    assert said.startswith("the check ran past its budget of 1 s of real time (--budget) before it finished: "
                           "give it a larger --budget"), said
    assert "the handler hangs" not in said
    assert "the handler hangs" in _what_happened("stall", None, notes, 90.0, 1.0, [])


@pytest.mark.parametrize("args, says", [
    (("--workers", "0"), "idem check: --workers must be 1 or more and at most 8; got 0"),
    (("--retries", "5"), "idem check: retries are MaximumRetryAttempts values: 0, 1 or 2 (got 5)"),
    (("--setup", "nomod:setup"), "idem check: --setup nomod:setup: cannot find module nomod: --setup takes "
                                  "MODULE:FUNCTION"),
])
def test_a_bad_option_is_one_line_of_the_check_s_own(args, says):
    code, out, err = cli(target("keyed_books"), "--retries", "0", *args)
    assert code == 2 and err.strip().splitlines() == [err.strip()] and err.startswith(says), err[-2000:]
