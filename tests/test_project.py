"""The project's own promises: environments in step, README honest, chapters complete."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LAST_CHAPTER = 13
sys.path.insert(0, str(ROOT / "tools"))

from binder import Environment  # noqa: E402
from widgetstate import FALLBACK, STATE_MIME, VIEW_MIME, fallback_text, reachable, stable_id  # noqa: E402

CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
# Binder's base image runs these (repo2docker's lock); environment.yml must never pin them.
SERVER = {"jupyterlab", "notebook", "jupyter-server", "jupyterlab-server", "notebook-shim", "jupyter-lsp"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


#: What a team installs beside its own pins: the core and the check extra take floors, not caps.
FLOORED = ("check",)


def pyproject_requirements() -> dict[str, str]:
    """name -> minor version (X.Y), for every pinned requirement of the workbook's extras (the
    environments Binder and CI reproduce); the core and the check extra take floors instead."""
    project = pyproject()
    found = {}
    pinned = [r for extra, rs in project["optional-dependencies"].items() if extra not in FLOORED for r in rs]
    for requirement in pinned:
        match = re.fullmatch(r"([A-Za-z0-9_.\-\[\],]+)>=(\d+\.\d+),<\d+\.\d+", requirement)
        if match:
            found[match.group(1).lower()] = match.group(2)
        else:
            assert requirement.startswith("charged-twice["), f"unpinned requirement {requirement!r}"
    return found


def constraint_pins() -> dict[str, str]:
    """canonical name -> exact version, from requirements/constraints.txt."""
    from packaging.utils import canonicalize_name

    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_every_requirement_is_pinned_to_a_minor_version():
    assert pyproject_requirements()


def test_the_core_and_the_check_extra_take_floors_and_a_cap_names_its_break():
    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text()
    project = pyproject()
    floored = project["dependencies"] + [r for e in FLOORED for r in project["optional-dependencies"][e]]
    assert floored
    for line in floored:
        requirement = Requirement(line)
        operators = {spec.operator for spec in requirement.specifier}
        assert ">=" in operators, f"{line} has no floor"
        if operators - {">="}:  # a cap, only beside a comment naming the break it avoids
            comment = text.split(line, 1)[0].rsplit("\n", 3)[-3:]
            assert any("#" in c and "break" in c for c in comment), f"{line} is capped without naming the break"


def test_the_check_extra_holds_what_the_check_and_the_handler_to_copy_import():
    from packaging.requirements import Requirement

    names = {Requirement(r).name for r in pyproject()["optional-dependencies"]["check"]}
    assert {"moto", "time-machine", "stripe"} <= names
    moto = next(Requirement(r) for r in pyproject()["optional-dependencies"]["check"] if r.startswith("moto"))
    assert {"dynamodb", "s3", "sqs", "sns", "ses", "events"} <= moto.extras


def test_the_action_installs_from_its_own_checkout_never_a_registry_name():
    action = (ROOT / "action.yml").read_text()
    assert "ACTION_PATH: ${{ github.action_path }}" in action
    installs = [line for line in action.splitlines() if "pip install" in line]
    assert installs and all('"${ACTION_PATH}[check]"' in line for line in installs), installs
    assert "charged-twice[check]\"" not in action and "default: \"charged-twice" not in action


def test_ci_runs_the_clean_install_and_the_lowest_and_newest_versions():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^tools/ci_clean_install\.sh$", ci, re.M)
    assert re.search(r"^tools/ci_lowest_newest\.sh$", ci, re.M)
    script = (ROOT / "tools" / "ci_clean_install.sh").read_text()
    assert "[check]" in script and "keyed.py:lambda_handler --retries 0 --json" in script
    assert "check-report.schema.json" in script and "jsonschema.validate" in script


def test_environment_yml_takes_only_python_and_pip_from_conda():
    environment = Environment.read()
    assert environment.conda == [f"python={environment.python}", "pip"]


def test_environment_yml_python_is_the_one_ci_runs():
    assert Environment.read().python == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_environment_yml_installs_the_workbook_extra_from_this_repository_at_the_pinned_versions():
    assert Environment.read().pip == ["-c requirements/constraints.txt", "-e .[workbook]"]


def test_the_workbook_extra_has_no_jupyterlab_and_the_lab_extra_has():
    extras = pyproject()["optional-dependencies"]
    assert not [r for r in extras["workbook"] if r.startswith(("jupyterlab>", "notebook>", "jupyter-server"))]
    assert "charged-twice[workbook]" in extras["lab"] and any(r.startswith("jupyterlab>=") for r in extras["lab"])
    assert "charged-twice[lab]" in extras["dev"]


def test_constraints_pin_every_workbook_requirement_inside_its_range():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = constraint_pins()
    for line in pyproject()["dependencies"] + pyproject()["optional-dependencies"]["workbook"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned in {CONSTRAINTS.name}"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement}"


def test_constraints_leave_binders_jupyter_server_alone():
    assert not SERVER & set(constraint_pins()), "pinning these could upgrade the JupyterLab Binder runs"


def test_constraints_are_what_this_environment_has():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "constraints.py"), "check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("remote", ["git@github.com:someone/ledger.git", "https://github.com/someone/ledger",
                                    "ssh://git@github.com/someone/ledger.git"])
def test_binder_url_comes_from_a_github_remote(remote):
    from binder import binder_url

    assert binder_url(remote) == ("https://mybinder.org/v2/gh/someone/ledger/HEAD"
                                  "?urlpath=lab/tree/notebooks/00_start_here.ipynb")


def test_readme_gives_exactly_the_two_commands_and_the_makefile_has_them():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \S+)$", setup, flags=re.M)
    assert commands == ["make lab", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^lab: install$", makefile, re.M) and re.search(r"^test: install$", makefile, re.M)


def test_ci_runs_the_readme_test_command():
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), re.M)


def test_the_readme_table_is_what_the_simulator_computes():
    from idem.cli.sim import format_headline
    from idem.explore import scenarios as sc

    computed = format_headline([sc.run(s).row() for s in sc.headline_scenarios()])
    assert computed in (ROOT / "README.md").read_text()


def test_every_notebook_matches_its_source():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "notebooks.py"), "check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_chapters_are_numbered_without_gaps_and_listed_in_the_readme_and_the_map():
    stems = [p.stem for p in CHAPTERS]
    assert [int(s[:2]) for s in stems] == list(range(LAST_CHAPTER + 1))
    readme = re.findall(r"^\| \d\d \| \[[^]]+\]\(notebooks/(\w+)\.ipynb\)", (ROOT / "README.md").read_text(), re.M)
    assert readme == stems
    start = (ROOT / "notebooks" / "source" / "00_start_here.py").read_text()
    the_map = start.split("## The map", 1)[1].split("## Setup", 1)[0]  # its two tables
    assert re.findall(r"^# \| \[[^]]+\]\((\w+)\.ipynb\)", the_map, re.M) == stems[1:]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_valid_nbformat(path):
    import nbformat

    nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_stored_executed_without_errors(path):
    cells = code_cells(path)
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    assert not [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_metadata_is_what_jupyterlab_writes_when_it_opens(path):
    """JupyterLab writes its kernel's kernelspec and language_info into a notebook on open, and
    marks the notebook modified if they differ from what is stored."""
    from ipykernel.ipkernel import IPythonKernel

    metadata = json.loads(path.read_text())["metadata"]
    assert metadata["kernelspec"] == {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                      "language": "python"}
    assert metadata["language_info"] == IPythonKernel.language_info, \
        "stored language_info is not this kernel's: run `make notebooks` with CI's Python"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_stores_its_widgets_state_with_stable_ids_and_a_text_fallback(path):
    """Viewers that do not run the notebook show each widget from this state (or read its text)."""
    notebook = json.loads(path.read_text())
    views = [o for c in code_cells(path) for o in c["outputs"] if VIEW_MIME in o.get("data", {})]
    if not views:
        assert "widgets" not in notebook["metadata"]
        return
    stored = notebook["metadata"].get("widgets", {}).get(STATE_MIME)
    assert stored, f"{path.name} shows widgets without their state: run `make notebooks`"
    assert (stored["version_major"], stored["version_minor"]) == (2, 0)
    roots = [o["data"][VIEW_MIME]["model_id"] for o in views]
    order = reachable(roots, stored["state"])
    assert sorted(order) == sorted(stored["state"]), "state kept for models no view reaches"
    assert order == [stable_id(path.stem, n) for n in range(len(order))], "widget ids are not the stable ones"
    for view in views:
        assert "".join(view["data"]["text/plain"]).startswith(FALLBACK)


@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.stem >= "01"], ids=lambda p: p.stem)
def test_chapter_has_its_parts(path):
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells)
    code = code_cells(path)
    widget_cells = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
                    and "nbval-ignore-output" in c.get("metadata", {}).get("tags", [])
                    and any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                            for o in c["outputs"])]
    assert widget_cells, "no widget cell"
    twin = next((c for c in cells[widget_cells[0] + 1:] if c["cell_type"] == "code"), None)
    assert twin and "nbval-ignore-output" not in twin.get("metadata", {}).get("tags", []), "widget without twin"
    assert "NBVAL_IGNORE_OUTPUT" not in text, "a marker the reader would see: tag the cell instead"
    pictures = [o for c in code for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert pictures or "```mermaid" in text, "no picture"
    assert "## Try it" in text and "<details>" in text
    assert "show_source(" in text, "the chapter does not show idem's code"
    number = int(path.stem[:2])
    onwards = "00" if number == LAST_CHAPTER else f"{number + 1:02d}"
    assert re.search(rf"\]\({onwards}_[a-z0-9_]+\.ipynb\)", text), f"no link to chapter {onwards}"


def test_a_widgets_text_fallback_folds_its_settings_to_the_page():
    """Chapter 12's explorer once showed its settings as one line of 135 characters."""
    state = {"box": {"state": {"children": [f"IPY_MODEL_{n}" for n in "abcde"]}}}
    state |= {n: {"state": {"description": f"setting {n}", "value": "thirty characters of value!"}}
              for n in "abcde"}
    rows = fallback_text("box", state).splitlines()
    assert rows[0] == FALLBACK and all(len(row) <= 100 for row in rows) and len(rows) == 4
    assert rows[1].startswith("Set to setting a: ") and rows[1].endswith(";")
    assert rows[3] == "  setting e: thirty characters of value!."
    assert " ".join(rows[1:]).count("setting") == 5
    short = {"box": {"state": {"children": ["IPY_MODEL_a"]}},
             "a": {"state": {"description": "x", "value": 1}}}
    assert fallback_text("box", short) == FALLBACK + "\nSet to x: 1."
