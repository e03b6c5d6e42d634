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
