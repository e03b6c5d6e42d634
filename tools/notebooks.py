"""Build the chapters: notebooks/source/NN_slug.py (jupytext percent format) -> executed .ipynb.

    python tools/notebooks.py build [NAME ...]   # rebuild and re-execute (all by default)
    python tools/notebooks.py check              # exit 1 if an .ipynb differs from its source

The .ipynb files are committed with their outputs, because `pytest --nbval` re-runs them
and compares. Edit the source, then run `make notebooks`.

Each explorer widget is stored with its state (tools/widgetstate.py): nbviewer draws its first view
without running the notebook, and GitHub or an untrusted JupyterLab show a readable line with its
settings. Widget ids are stable and the kernel's language_info is kept (JupyterLab writes it on open),
so an unchanged chapter rebuilds unchanged and opens unmodified in JupyterLab (when its kernel
runs the Python version that built it: JupyterLab writes that version into the notebook).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

from widgetstate import WIDGETS_KEY, stable_widget_state  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "source"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def sources(names: list[str]) -> list[Path]:
    found = sorted(SOURCES.glob("[0-9][0-9]_*.py"))
    if names:
        found = [p for p in found if p.stem in names or p.stem[:2] in names]
        if not found:
            raise SystemExit(f"no chapter source matches {' '.join(names)} in {SOURCES}")
    return found


def from_source(path: Path) -> nbformat.NotebookNode:
    notebook = jupytext.read(path)
    notebook.metadata = {"kernelspec": KERNELSPEC,
                         "language_info": {"name": "python", "pygments_lexer": "ipython3"}}
    for number, cell in enumerate(notebook.cells):
        cell.metadata = kept_metadata(cell)
        cell.id = f"cell-{number:03d}"  # stable ids: rebuilding an unchanged chapter changes nothing
    return notebook


#: The only cell tag a chapter keeps: nbval's "compare nothing", for a widget cell (its twin below
#: is compared) or a run that is random by design. A tag, not a comment, so the reader never sees it.
IGNORE_OUTPUT = "nbval-ignore-output"


def kept_metadata(cell: nbformat.NotebookNode) -> dict:
    tags = [t for t in cell.metadata.get("tags", []) if t == IGNORE_OUTPUT]
    return {"tags": tags} if tags else {}


def build(path: Path) -> None:
    # The kernel imports this checkout's idem, never another one the venv was installed from
    # (a git worktree shares the venv of the checkout that made it).
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    notebook = from_source(path)
    NotebookClient(notebook, timeout=300, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    widgets = notebook.metadata.get(WIDGETS_KEY)
    for cell in notebook.cells:
        cell.metadata = kept_metadata(cell)
    # The kernel's own language_info, as nbclient stored it: JupyterLab writes exactly this into
    # the notebook when its kernel connects, and marks the notebook modified if it differs.
    notebook.metadata = {"kernelspec": KERNELSPEC, "language_info": notebook.metadata["language_info"]}
    if widgets:
        notebook.metadata[WIDGETS_KEY] = stable_widget_state(notebook, widgets, path.stem)
    target = NOTEBOOKS / f"{path.stem}.ipynb"
    nbformat.validate(notebook)  # JupyterLab warns about, and may refuse, an invalid notebook
    nbformat.write(notebook, target)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    print(f"built {target.relative_to(ROOT)}" + (f" WITH {len(errors)} ERROR(S)" if errors else ""))


def differences(path: Path) -> list[str]:
    """Cells whose source differs between the chapter's .py and its stored .ipynb."""
    target = NOTEBOOKS / f"{path.stem}.ipynb"
    if not target.exists():
        return [f"{target.name} is missing: run make notebooks"]
    want = [(c.cell_type, c.source, kept_metadata(c)) for c in from_source(path).cells]
    have = [(c.cell_type, c.source, kept_metadata(c)) for c in nbformat.read(target, as_version=4).cells]
    if len(want) != len(have):
        return [f"{target.name}: {len(have)} cells stored, {len(want)} in the source"]
    return [f"{target.name}: cell {i} differs from its source" for i, (w, h) in enumerate(zip(want, have))
            if w != h]


def main(argv: list[str]) -> int:
    command, names = (argv[0], argv[1:]) if argv else ("build", [])
    if command == "build":
        for path in sources(names):
            build(path)
        return 0
    if command == "check":
        problems = [p for path in sources(names) for p in differences(path)]
        print("\n".join(problems) or "every notebook matches its source")
        return 1 if problems else 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
