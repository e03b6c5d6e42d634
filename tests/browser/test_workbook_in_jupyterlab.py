"""Every chapter in a real JupyterLab, in Debian's headless Chromium: `make test-browser`.

For each notebooks/NN_*.ipynb: open it, clear its outputs, Run > Run All Cells, wait for the
kernel to go idle, then assert that no cell shows an error, every widget renders, changing each
explorer's controls changes what it shows, mermaid diagrams draw and figures appear. A screenshot
per chapter (and per explorer) lands in build/screenshots/. The committed notebooks are never saved.
A second test breaks widgets on purpose and expects each check to say so.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from labdriver import REPO, WIDGET_MIME
from labpage import Findings, check_notebook, record

NOTEBOOKS = REPO / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
SCRATCH = REPO / "build" / "browser-test"  # git-ignored; inside the server's root so Lab can open it

pytestmark = pytest.mark.browser


def _message(found: Findings) -> str:
    shots = "\n".join(f"  {s}" for s in found.screenshots)
    return "\n".join(found.problems) + f"\nscreenshots:\n{shots}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_and_renders_in_jupyterlab(chapter: Path, lab_page, screenshots: Path,
                                                request: pytest.FixtureRequest) -> None:
    stored = chapter.read_bytes()
    found = check_notebook(lab_page, chapter.relative_to(REPO).as_posix(), chapter, screenshots)
    record(request, found)
    print(f"{chapter.name}: {found.counts}; screenshots in {screenshots}")
    assert not found.problems, _message(found)
    assert found.counts.get("cells_run", 0) > 0, f"{chapter.name}: no cell ran"
    assert chapter.read_bytes() == stored, f"{chapter.name} changed on disk during the browser run"


# A notebook with one widget broken in each way a reader could meet, plus a failing diagram and cell.
BROKEN_CELLS = [
    ("code", "import ipywidgets as widgets\nfrom IPython.display import display"),
    ("code", "# a widget view whose model the kernel never created\n"
             f"display({{{WIDGET_MIME!r}: {{'model_id': 'f' * 32, 'version_major': 2, 'version_minor': 0}},\n"
             "         'text/plain': 'a widget that does not exist'}, raw=True)"),
    ("code", "# an explorer whose callback raises inside its output\n"
             "pick = widgets.Dropdown(options=['a', 'b'], value='a', description='pick')\n"
             "shown = widgets.Output()\n\n"
             "def refresh(change=None):\n"
             "    shown.clear_output(wait=True)\n"
             "    with shown:\n"
             "        if pick.value != 'a':\n"
             "            raise ValueError('this explorer is broken on purpose')\n"
             "        print('showing', pick.value)\n\n"
             "pick.observe(refresh, names='value')\nrefresh()\nwidgets.VBox([pick, shown])"),
    ("code", "# an explorer whose callback raises before it shows anything\n"
             "mute = widgets.ToggleButtons(options=['x', 'y'], description='mute')\n"
             "quiet = widgets.Output()\n"
             "with quiet:\n    print('showing', mute.value)\n\n"
             "def fail(change):\n    raise RuntimeError('this callback is broken on purpose')\n\n"
             "mute.observe(fail, names='value')\nwidgets.VBox([mute, quiet])"),
    ("markdown", "```mermaid\nflowchart LR\n    A --> \n```"),
    ("code", "raise RuntimeError('a cell that fails on purpose')"),
]


def _write_notebook(path: Path, cells: list[tuple[str, str]]) -> None:
    def cell(kind: str, source: str) -> dict[str, object]:
        extra = {"execution_count": None, "outputs": []} if kind == "code" else {}
        return {"cell_type": kind, "metadata": {}, "source": source, **extra}

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "cells": [cell(kind, source) for kind, source in cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1))


def test_broken_widgets_diagram_and_cell_fail_the_checks(lab_page, screenshots: Path,
                                                        request: pytest.FixtureRequest) -> None:
    notebook = SCRATCH / "broken_on_purpose.ipynb"
    _write_notebook(notebook, BROKEN_CELLS)
    try:
        found = check_notebook(lab_page, notebook.relative_to(REPO).as_posix(), notebook, screenshots)
    finally:
        notebook.unlink(missing_ok=True)
    record(request, found)
    problems = "\n".join(found.problems)
    expected = {
        "unknown widget model": "cell 1: widget did not render",
        "callback raising inside the output":
            "cell 2: after changing pick (select) to 'b' the widget shows a traceback ending "
            "'ValueError: this explorer is broken on purpose'",
        "callback raising outside the output": "cell 3: changing mute (toggles) to 'y' did not change what the widget shows",
        "broken mermaid": "cell 4: mermaid diagram not drawn",
        "failing cell": "cell 5 shows an error: RuntimeError: a cell that fails on purpose",
    }
    missed = [name for name, text in expected.items() if text not in problems]
    assert not missed, f"the checks did not catch: {missed}\nthey reported:\n{problems}"
    assert len(found.problems) == len(set(found.problems)), problems
