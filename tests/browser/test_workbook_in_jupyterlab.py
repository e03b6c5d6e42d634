"""Every chapter in a real JupyterLab, in Debian's headless Chromium: `make test-browser`.

For each notebooks/NN_*.ipynb: open it and check that opening left it unmodified (no tab marked
`jp-mod-dirty`) and that its stored widgets read well before a run; then clear its outputs,
Run > Run All Cells, wait for the kernel to go idle, and assert that no cell shows an error, every widget renders, changing each
explorer's controls changes what it shows, mermaid diagrams draw and figures appear. A screenshot
per chapter (and per explorer) lands in build/screenshots/. The server refuses every save, so the
committed notebooks cannot change; one test proves the refusal, another breaks widgets, a diagram,
a cell and the notebook's metadata on purpose and expects each check to say so.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from labdriver import REPO, WIDGET_MIME, LabServer
from labpage import JS_READY, Findings, check_notebook, js, record, wait_until

NOTEBOOKS = REPO / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
SCRATCH = REPO / "build" / "browser-test"  # git-ignored; inside the server's root so Lab can open it

pytestmark = pytest.mark.browser


def _message(found: Findings) -> str:
    shots = "\n".join(f"  {s}" for s in found.screenshots)
    return "\n".join(found.problems) + f"\nscreenshots:\n{shots}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_and_renders_in_jupyterlab(chapter: Path, lab: LabServer, lab_page, screenshots: Path,
                                                request: pytest.FixtureRequest) -> None:
    offset, saves = lab.log_offset(), len(lab.refused_saves())
    found = check_notebook(lab_page, chapter.relative_to(REPO).as_posix(), chapter, screenshots)
    found.server_errors = lab.log_problems(offset)
    record(request, found)
    print(f"{chapter.name}: {found.counts}; screenshots in {screenshots}")
    assert not found.problems, _message(found)
    assert found.counts.get("cells_run", 0) > 0, f"{chapter.name}: no cell ran"
    # The server refuses every save (and notes it); nothing may even try to write the chapter.
    assert lab.refused_saves()[saves:] == [], "JupyterLab tried to save during the browser run"


# A notebook with one widget broken in each way a reader could meet, plus a failing diagram and cell.
# Cell 1 is stored with the output a notebook had before tools/notebooks.py gave widgets a fallback.
BROKEN_CELLS = [
    ("code", "import ipywidgets as widgets\nfrom IPython.display import display"),
    ("code", "# a widget view whose model the kernel never created\n"
             f"display({{{WIDGET_MIME!r}: {{'model_id': 'f' * 32, 'version_major': 2, 'version_minor': 0}},\n"
             "         'text/plain': 'a widget that does not exist'}, raw=True)",
     [{"output_type": "display_data", "metadata": {},
       "data": {WIDGET_MIME: {"model_id": "f" * 32, "version_major": 2, "version_minor": 0},
                "text/plain": "VBox(children=(Dropdown(description='pick', options=('a', 'b'), value='a'),…"}}]),
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
# Metadata JupyterLab must rewrite on open (its kernel reports another display name and a
# language_info), so the notebook opens modified.
STALE_METADATA = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def _chapter_metadata() -> dict[str, object]:
    """The chapters' kernelspec and language_info: what JupyterLab finds already right on open."""
    stored = json.loads(CHAPTERS[0].read_text())["metadata"]
    return {key: stored[key] for key in ("kernelspec", "language_info")}


def _write_notebook(path: Path, cells: list[tuple], metadata: dict[str, object] | None = None) -> None:
    """A valid nbformat 4.5 notebook of (kind, source[, stored outputs]) cells."""
    def cell(number: int, kind: str, source: str, outputs: list | None = None) -> dict[str, object]:
        extra = {"execution_count": 1 if outputs else None, "outputs": outputs or []} if kind == "code" else {}
        return {"id": f"cell-{number:03d}", "cell_type": kind, "metadata": {}, "source": source, **extra}

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "cells": [cell(number, *spec) for number, spec in enumerate(cells)],
        "metadata": _chapter_metadata() if metadata is None else metadata,
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1))


def test_broken_widgets_diagram_and_cell_fail_the_checks(lab_page, screenshots: Path,
                                                        request: pytest.FixtureRequest) -> None:
    notebook = SCRATCH / "broken_on_purpose.ipynb"
    _write_notebook(notebook, BROKEN_CELLS, STALE_METADATA)
    try:
        found = check_notebook(lab_page, notebook.relative_to(REPO).as_posix(), notebook, screenshots)
    finally:
        notebook.unlink(missing_ok=True)
    record(request, found)
    problems = "\n".join(found.problems)
    expected = {
        "metadata JupyterLab rewrites": "opening the notebook marked it modified (model dirty: True, "
                                        "tab jp-mod-dirty: True) before anything ran",
        "stored widget without a readable fallback": "cell 1: before a run, the stored widget shows neither "
                                                     "the widget nor its readable fallback",
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


def test_jupyterlab_refuses_to_save(lab: LabServer, lab_page, request: pytest.FixtureRequest) -> None:
    notebook = SCRATCH / "save_me.ipynb"
    _write_notebook(notebook, [("code", "1 + 1")])
    path, stored, saves = notebook.relative_to(REPO).as_posix(), notebook.read_bytes(), len(lab.refused_saves())
    try:
        lab_page.evaluate(js("return app.commands.execute('docmanager:open', {path: arg}).then(() => true);"), path)
        assert wait_until(lambda: lab_page.evaluate(JS_READY, path), 60), "the notebook did not open"
        lab_page.evaluate(js("const p = panelAt(arg); p.context.model.dirty = true; "
                             "return p.context.save().then(() => 'saved', (e) => String(e));"), path)
        assert lab.refused_saves()[saves:] == [path]
        assert notebook.read_bytes() == stored
    finally:
        lab_page.keyboard.press("Escape")  # the "File Save Error" dialog
        notebook.unlink(missing_ok=True)
