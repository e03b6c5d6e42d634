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
# pyproject requirement -> the conda-forge packages that provide it
LAST_CHAPTER = 9
CONDA_NAMES = {"moto[server]": ["moto", "flask", "flask-cors"]}


def pyproject_requirements() -> dict[str, str]:
    """name -> minor version (X.Y), for every pinned requirement of the package and its extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {}
    for requirement in project["dependencies"] + sum(project["optional-dependencies"].values(), []):
        match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)>=(\d+\.\d+),<\d+\.\d+", requirement)
        if match:
            found[match.group(1).lower()] = match.group(2)
        else:
            assert requirement.startswith("idem["), f"unpinned requirement {requirement!r}"
    return found


def conda_dependencies() -> dict[str, str]:
    text = (ROOT / "environment.yml").read_text()
    block = text.split("dependencies:", 1)[1].split("- pip:", 1)[0]
    found = {}
    for line in block.splitlines():
        match = re.match(r"\s+- ([a-z0-9_.\-]+)(?:=(\S+))?\s*(#.*)?$", line)
        if match and match.group(1) not in ("pip", "python"):
            found[match.group(1)] = match.group(2) or ""
    return found


def pip_section() -> list[str]:
    text = (ROOT / "environment.yml").read_text().split("- pip:", 1)[1]
    return [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("- ")]


def test_environment_yml_has_the_same_packages_at_the_same_versions():
    conda = conda_dependencies()
    from_pip = {re.split(r"[<>=]", line)[0]: line for line in pip_section() if line != "-e ."}
    wanted = {}
    for name, version in pyproject_requirements().items():
        if name in from_pip:
            assert from_pip.pop(name).startswith(f"{name}>={version},"), f"{name} differs"
            continue
        names = CONDA_NAMES.get(name, [name])
        wanted[names[0]] = version
        wanted.update({extra: "" for extra in names[1:]})
    assert conda == wanted
    assert not from_pip, f"pip installs what pyproject does not ask for: {from_pip}"


def test_environment_yml_installs_this_package():
    assert pip_section()[-1] == "-e ."


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
    from idem.cli import format_headline
    from idem.local import scenarios as sc

    computed = format_headline([sc.run(s).row() for s in sc.headline_scenarios()])
    assert computed in (ROOT / "README.md").read_text()


def test_every_notebook_matches_its_source():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "notebooks.py"), "check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_valid_nbformat(path):
    import nbformat

    nbformat.validate(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_is_stored_executed_without_errors(path):
    cells = code_cells(path)
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    assert not [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]


@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.stem >= "01"], ids=lambda p: p.stem)
def test_chapter_has_its_parts(path):
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells)
    code = code_cells(path)
    widget_cells = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
                    and "".join(c["source"]).startswith("# NBVAL_IGNORE_OUTPUT")
                    and any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                            for o in c["outputs"])]
    assert widget_cells, "no widget cell"
    twin = next((c for c in cells[widget_cells[0] + 1:] if c["cell_type"] == "code"), None)
    assert twin and not "".join(twin["source"]).startswith("# NBVAL_IGNORE_OUTPUT"), "widget without twin"
    pictures = [o for c in code for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert pictures or "```mermaid" in text, "no picture"
    assert "## Try it" in text and "<details>" in text
    assert "show_source(" in text, "the chapter does not show idem's code"
    number = int(path.stem[:2])
    onwards = "00" if number == LAST_CHAPTER else f"{number + 1:02d}"
    assert re.search(rf"\]\({onwards}_[a-z0-9_]+\.ipynb\)", text), f"no link to chapter {onwards}"
