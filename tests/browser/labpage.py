"""Drive one notebook in a live JupyterLab page and list everything a reader would see go wrong.

`check_notebook` opens the notebook and, before anything runs, checks that opening it left it
unmodified and that every stored widget shows the widget or its readable text. Then it
clears the stored outputs, runs every cell through the Run menu, waits for the kernel to go idle,
and checks what the page shows: errors, widgets, explorer widgets reacting to their controls,
mermaid diagrams and matplotlib figures. It returns `Findings` (problems as sentences, counts,
screenshots); the test asserts on them.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from labdriver import REPO, WIDGET_MIME

sys.path.insert(0, str(REPO / "tools"))

from widgetstate import FALLBACK  # noqa: E402

RUN_TIMEOUT = 300.0      # a chapter's Run All, seconds
WIDGET_TIMEOUT = 60.0    # an explorer's answer to one control change, seconds
QUIET = 2.0              # an idle kernel this long after a change means the explorer has answered
RENDER_TIMEOUT = 20.0    # widgets, diagrams and images appearing after the run, seconds
VIEWPORT = {"width": 1280, "height": 900}
MAX_SHOT_HEIGHT = 16000  # Chromium's largest capture, pixels
MERMAID_FENCE = re.compile(r"^\s*```+\s*mermaid\b", re.MULTILINE)

# Every snippet below starts with this: the notebook panel open at `path`.
PRELUDE = """
const app = window.jupyterapp;
const panelAt = (path) => {
  for (const w of app.shell.widgets('main')) { if (w.context && w.context.path === path) return w; }
  return null;
};
"""


def js(body: str) -> str:
    """A page function of one argument `arg` with PRELUDE in scope."""
    return f"(arg) => {{ {PRELUDE} {body} }}"


JS_READY = js("""
const p = panelAt(arg);
const k = p && p.sessionContext.session && p.sessionContext.session.kernel;
return Boolean(p && p.context.isReady && p.content.widgets.length && k && k.status === 'idle');
""")

JS_RUN_STATE = js("""
const p = panelAt(arg);
const k = p.sessionContext.session && p.sessionContext.session.kernel;
let started = true, busy = 0, outputs = 0;
const code = p.content.widgets.filter((c) => c.model.type === 'code');
if (code.length) started = false;
for (const c of code) {
  if (c.model.executionCount !== null) started = true;
  outputs += c.model.outputs.length;
  const prompt = c.node.querySelector('.jp-InputPrompt');
  if (prompt && prompt.textContent.includes('*')) busy += 1;
}
return {status: k ? k.status : 'no kernel', started, busy, outputs};
""")

JS_CELLS = js("""
const p = panelAt(arg);
return p.content.widgets.map((c, i) => {
  c.node.setAttribute('data-idem-cell', String(i));
  const m = c.model;
  const cell = {index: i, type: m.type, source: m.sharedModel.getSource(), count: null, outputs: []};
  if (m.type === 'code') {
    cell.count = m.executionCount;
    for (let k = 0; k < m.outputs.length; k++) {
      const o = m.outputs.get(k).toJSON();
      cell.outputs.push({type: o.output_type, mimes: Object.keys(o.data || {}),
                         ename: o.ename || '', evalue: o.evalue || ''});
    }
  }
  return cell;
});
""")

# The rendered page: widget views, tracebacks, diagrams and images, per cell.
JS_RENDERED = js("""
const p = panelAt(arg);
const text = (el) => (el.innerText || el.textContent || '').trim();
return p.content.widgets.map((c, i) => {
  const area = c.node.querySelector('.jp-Cell-outputArea');
  const children = area ? Array.from(area.querySelectorAll(':scope > .jp-OutputArea-child')) : [];
  const views = children.map((child) => {
    const view = child.querySelector(':scope > .jp-OutputArea-output > .jupyter-widgets');
    return {rendered: Boolean(view && view.offsetHeight > 0 && (view.matches('[class*="widget-"]')
                               || view.querySelector('[class*="widget-"]')))
                      && !text(child).includes('Error displaying widget'),
            text: text(child).slice(0, 200)};
  });
  const tracebacks = Array.from(c.node.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(text).filter((t) => /Traceback|Error\\b|Exception\\b/.test(t)).map((t) => t.slice(-3000));
  const markdown = c.node.querySelector('.jp-MarkdownOutput');
  const images = Array.from(c.node.querySelectorAll('img')).filter((im) => im.src.startsWith('data:image/png'));
  return {
    index: i, views, tracebacks,
    widgetErrors: text(c.node).includes('Error displaying widget'),
    svgs: markdown ? Array.from(markdown.querySelectorAll('.jp-RenderedMermaid:not(.jp-mod-warning)'))
      .filter((d) => d.querySelector('svg') || Array.from(d.querySelectorAll('img'))
        .some((im) => im.src.startsWith('data:image/svg+xml') && im.complete && im.naturalWidth > 0)).length : 0,
    rawMermaid: markdown ? Array.from(markdown.querySelectorAll('pre code'))
      .filter((el) => !el.closest('.jp-RenderedMermaid') && (/language-mermaid/.test(el.className)
                      || /^(flowchart|graph|sequenceDiagram|stateDiagram)\b/.test(text(el)))).length : 0,
    mermaidErrors: markdown ? markdown.querySelectorAll('.jp-RenderedMermaid.jp-mod-warning').length > 0 : false,
    pngs: images.length,
    brokenPngs: images.filter((im) => !(im.complete && im.naturalWidth > 0)).length,
  };
});
""")

# Explorer widgets: views with an Output widget and controls outside it; controls get tagged.
JS_EXPLORERS = js("""
const p = panelAt(arg);
const found = [];
p.content.widgets.forEach((c, i) => {
  const area = c.node.querySelector('.jp-Cell-outputArea');
  if (!area) return;
  area.querySelectorAll(':scope > .jp-OutputArea-child').forEach((child, k) => {
    const root = child.querySelector(':scope > .jp-OutputArea-output > .jupyter-widgets');
    if (!root || !root.querySelector('.widget-output')) return;
    root.setAttribute('data-idem-view', `${i}-${k}`);
    const own = (el) => { const out = el.closest('.widget-output'); return !(out && root.contains(out)); };
    const controls = [];
    const add = (el, kind) => {
      if (!own(el)) return;
      const id = `${i}-${k}-${controls.length}`;
      el.setAttribute('data-idem-control', id);
      const box = el.closest('.jupyter-widgets, .widget-toggle-buttons, .widget-radio') || el;
      const label = box.querySelector('.widget-label');
      controls.push({id, kind, label: label ? label.textContent.trim() : kind});
    };
    root.querySelectorAll('select').forEach((el) => add(el, 'select'));
    root.querySelectorAll('.widget-toggle-buttons').forEach((el) => add(el, 'toggles'));
    root.querySelectorAll('.widget-radio-box').forEach((el) => add(el, 'radios'));
    root.querySelectorAll('.widget-checkbox input[type=checkbox]').forEach((el) => add(el, 'checkbox'));
    root.querySelectorAll('button.widget-toggle-button').forEach((el) => {
      if (!el.closest('.widget-toggle-buttons')) add(el, 'toggle');
    });
    root.querySelectorAll('.noUi-handle').forEach((el) => add(el, 'slider'));
    if (controls.length) found.push({cell: i, output: k, view: `${i}-${k}`, controls});
  });
});
return found;
""")

# What an explorer shows: the text and images of its Output widgets.
JS_SHOWN = """(root) => Array.from(root.querySelectorAll('.widget-output')).map((o) =>
  (o.innerText || '') + '|' + Array.from(o.querySelectorAll('img')).map((im) => im.src.length + ':' + im.src.slice(-64)).join(',')
).join('\\n')"""

# Tracebacks shown under a node (a widget view): error outputs render as stderr text.
JS_TRACEBACKS = """(root) => Array.from(root.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
  .map((el) => (el.innerText || el.textContent || '').trim())
  .filter((t) => /Traceback|Error\\b|Exception\\b/.test(t)).map((t) => t.slice(-3000))"""

# Whether the notebook counts as modified: its model, and its tab (JupyterLab's DocumentWidget adds
# jp-mod-dirty to the title's class, which the dock panel's tab shows).
JS_DIRTY = js("""
const p = panelAt(arg);
const tabs = Array.from(document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab'))
  .filter((t) => { const l = t.querySelector('.lm-TabBar-tabLabel'); return l && l.textContent === p.title.label; });
return {model: p.context.model.dirty, tabs: tabs.length, metadata: p.context.model.toJSON().metadata,
        tab: tabs.some((t) => t.classList.contains('jp-mod-dirty')) || p.title.className.includes('jp-mod-dirty')};
""")

JS_NOTEBOOK_HEIGHT = js("""
const p = panelAt(arg);
const outer = p.node.querySelector('.jp-WindowedPanel-outer') || p.content.node;
const toolbar = p.toolbar ? p.toolbar.node.offsetHeight : 0;
return outer.scrollHeight + toolbar + (window.innerHeight - outer.clientHeight - toolbar);
""")

JS_CLOSE = js("""
for (const w of Array.from(app.shell.widgets('main'))) {
  if (w.context && w.context.model) w.context.model.dirty = false;
  w.dispose();
}
return true;
""")


@dataclass
class Findings:
    """What one notebook showed in JupyterLab."""

    notebook: str
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    screenshots: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)

    def lap(self, phase: str, since: float) -> float:
        """Note how long `phase` took; the time now, to time the next one."""
        now = time.monotonic()
        self.phases[phase] = round(now - since, 1)
        return now

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.notebook}: {text}")

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


@dataclass
class Expected:
    """What the stored notebook says the run must show, per cell index."""

    widgets: set[int]
    figures: set[int]
    mermaid: dict[int, int]
    cells: int


def expectations(path: Path) -> Expected:
    """Read the committed .ipynb: which cells show widgets, figures and mermaid diagrams."""
    nb = json.loads(path.read_text())
    widgets, figures, mermaid = set(), set(), {}
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown" and MERMAID_FENCE.search(source):
            mermaid[i] = len(MERMAID_FENCE.findall(source))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                widgets.add(i)
            if "image/png" in data:
                figures.add(i)
    return Expected(widgets, figures, mermaid, len(nb["cells"]))


def wait_until(condition: Callable[[], Any], timeout: float, interval: float = 0.25) -> Any:
    """Poll `condition` until it returns something truthy; that value, or None at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def menu(page: Page, title: str, command: str) -> None:
    """Click a main-menu entry, the way a reader does: `title` in the menu bar, then `command`."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{title}$")).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()


def dialog_text(page: Page) -> str:
    dialogs = page.locator(".jp-Dialog")
    return dialogs.first.inner_text() if dialogs.count() else ""


def wait_for_run(page: Page, path: str, timeout: float = RUN_TIMEOUT) -> bool:
    """True once the run has started and then settled (see `wait_kernel_idle`)."""
    return wait_kernel_idle(page, path, timeout, started=True, interval=0.25)


def wait_kernel_idle(page: Page, path: str, timeout: float = WIDGET_TIMEOUT, started: bool = False,
                     interval: float = 0.1) -> bool:
    """True once the kernel is idle and no cell waits to run, on three polls in a row
    (and, with `started`, some cell has run since the outputs were cleared)."""
    calm = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = page.evaluate(JS_RUN_STATE, path)
        settled = state["status"] == "idle" and not state["busy"] and (state["started"] or not started)
        calm = calm + 1 if settled else 0
        if calm >= 3:
            return True
        time.sleep(interval)
    return False


def check_notebook(page: Page, path: str, file: Path, shots: Path) -> Findings:
    """Open `path` (relative to the server root), run it, check it; never raises on what it finds."""
    name = file.stem
    found = Findings(notebook=file.name)
    started = time.monotonic()
    expected = expectations(file)
    lap = started
    try:
        if _open(page, path, found):
            lap = found.lap("open", lap)
            _check_as_stored(page, path, file, expected, found)
            lap = found.lap("stored", lap)
            _clear(page, path, found)
            _run_all(page, path, found)
            lap = found.lap("run", lap)
            _check_outputs(page, path, expected, found)
            lap = found.lap("render", lap)
            _check_explorers(page, path, found, shots, name)
            _check_after_interaction(page, path, found)
            if expected.widgets and not found.counts.get("controls_changed"):
                found.problem("the stored notebook shows widgets, but no widget control could be changed")
            lap = found.lap("explore", lap)
    except PlaywrightError as error:
        found.problem(f"the page stopped answering: {str(error).splitlines()[0]}")
    finally:
        shot = screenshot(page, path, shots / f"{name}.png")
        if shot.exists():
            found.screenshots.insert(0, shot)
        found.lap("screenshot", lap)
        found.seconds = time.monotonic() - started
    return found


def _open(page: Page, path: str, found: Findings) -> bool:
    """Open the notebook and wait for its kernel; False if it never got ready."""
    page.keyboard.press("Escape")  # no menu or dialog left open by the previous notebook
    page.evaluate(js("return app.commands.execute('docmanager:open', {path: arg, factory: 'Notebook'}).then(() => true);"), path)
    if not wait_until(lambda: page.evaluate(JS_READY, path), 90):
        found.problem(f"the notebook or its kernel was not ready within 90 s; dialog: {dialog_text(page)!r}")
        return False
    return True


def _check_as_stored(page: Page, path: str, file: Path, expected: Expected, found: Findings) -> None:
    """Before anything runs: opening the notebook did not modify it, and each stored widget shows
    something a reader can use. JupyterLab draws a stored widget from the state saved with the
    notebook only when it trusts the notebook; an untrusted one (a fresh clone, Binder) shows the
    output's text, which tools/widgetstate.py makes a readable line. Never an error, never a repr."""
    def settled() -> list[dict[str, Any]] | None:
        shown = page.evaluate(JS_RENDERED, path)
        return shown if all(shown[i]["views"] for i in expected.widgets) else None

    shown = wait_until(settled, RENDER_TIMEOUT) or page.evaluate(JS_RENDERED, path)
    for i in sorted(expected.widgets):
        views = shown[i]["views"]
        text = " ".join(v["text"] for v in views)
        if shown[i]["widgetErrors"] or not views:
            found.problem(f"cell {i}: before a run, the stored widget shows an error or nothing ({text[:120]!r})")
        elif all(v["rendered"] or FALLBACK in v["text"] for v in views):
            found.add("stored_widgets")
        else:
            found.problem(f"cell {i}: before a run, the stored widget shows neither the widget nor its "
                          f"readable fallback ({text[:120]!r}); rebuild it with tools/notebooks.py")
    time.sleep(QUIET / 2)  # the kernel's language_info and spec have reached the notebook's metadata
    dirty = page.evaluate(JS_DIRTY, path)
    if dirty["model"] or dirty["tab"]:
        found.problem(f"opening the notebook marked it modified (model dirty: {dirty['model']}, "
                      f"tab jp-mod-dirty: {dirty['tab']}) before anything ran{_rewritten(file, dirty['metadata'])}")
    elif dirty["tabs"] != 1:
        found.problem(f"found {dirty['tabs']} tabs labelled like the notebook, expected 1")
    else:
        found.add("opened_unmodified")


def _rewritten(file: Path, metadata: dict[str, Any]) -> str:
    """Which metadata JupyterLab changed on open, stored value -> its value. It writes the kernel's
    kernelspec and language_info (with the kernel's Python version) into every notebook it opens."""
    stored = json.loads(file.read_text()).get("metadata", {})
    changed = [f"{key}: {json.dumps(stored.get(key))} -> {json.dumps(metadata.get(key))}"
               for key in sorted(set(stored) | set(metadata)) if stored.get(key) != metadata.get(key)]
    return ("; JupyterLab rewrote " + "; ".join(changed))[:600] if changed else ""


def _clear(page: Page, path: str, found: Findings) -> None:
    """Edit > Clear Outputs of All Cells, and wait until no output is left."""
    menu(page, "Edit", "editmenu:clear-all")
    if not wait_until(lambda: page.evaluate(JS_RUN_STATE, path)["outputs"] == 0, 10):
        found.problem("Edit > Clear Outputs of All Cells left outputs behind")


def _run_all(page: Page, path: str, found: Findings) -> None:
    menu(page, "Run", "runmenu:run-all")
    if not wait_for_run(page, path):
        found.problem(f"Run > Run All Cells did not finish within {RUN_TIMEOUT:.0f} s")
    if dialog_text(page):
        found.problem(f"a dialog is open: {dialog_text(page)[:200]!r}")


def _check_outputs(page: Page, path: str, expected: Expected, found: Findings) -> None:
    cells = page.evaluate(JS_CELLS, path)
    if len(cells) != expected.cells:
        found.problem(f"JupyterLab shows {len(cells)} cells, the file has {expected.cells}")
    not_run = [c["index"] for c in cells if c["type"] == "code" and c["source"].strip() and c["count"] is None]
    if not_run:
        found.problem(f"cell(s) {', '.join(map(str, not_run))} did not run")
    for cell in cells:
        i = cell["index"]
        if cell["type"] != "code":
            continue
        found.add("cells_run", cell["count"] is not None)
        for out in cell["outputs"]:
            if out["type"] == "error":
                found.problem(f"cell {i} shows an error: {out['ename']}: {out['evalue']}"[:300])
        mimes = {m for out in cell["outputs"] for m in out["mimes"]}
        if i in expected.widgets and WIDGET_MIME not in mimes:
            found.problem(f"cell {i} should display a widget (it does in the stored notebook); the run displayed none")
        if i in expected.figures and "image/png" not in mimes:
            found.problem(f"cell {i} should show a matplotlib figure (it does in the stored notebook); the run showed none")
    widget_outputs = {(c["index"], k) for c in cells for k, out in enumerate(c["outputs"]) if WIDGET_MIME in out["mimes"]}

    def settled() -> list[dict[str, Any]] | None:
        shown = page.evaluate(JS_RENDERED, path)
        views_ok = all(k < len(shown[i]["views"]) and (shown[i]["views"][k]["rendered"] or shown[i]["widgetErrors"])
                       for i, k in widget_outputs)
        mermaid_ok = all(shown[i]["svgs"] >= n or shown[i]["mermaidErrors"] for i, n in expected.mermaid.items())
        images_ok = all(s["brokenPngs"] == 0 for s in shown)
        return shown if views_ok and mermaid_ok and images_ok else None

    shown = wait_until(settled, RENDER_TIMEOUT) or page.evaluate(JS_RENDERED, path)
    for i, k in sorted(widget_outputs):
        views = shown[i]["views"]
        if k >= len(views) or not views[k]["rendered"]:
            text = views[k]["text"] if k < len(views) else ""
            found.problem(f"cell {i}: widget did not render (shows {text[:120]!r})")
        else:
            found.add("widgets")
    for i, n in expected.mermaid.items():
        s = shown[i]
        if s["svgs"] < n or s["rawMermaid"] or s["mermaidErrors"]:
            found.problem(f"cell {i}: mermaid diagram not drawn ({s['svgs']} SVG drawing(s) for {n} diagram(s), "
                          f"{s['rawMermaid']} raw block(s), syntax error: {s['mermaidErrors']})")
        else:
            found.add("diagrams", n)
    for s in shown:
        found.add("figures", s["pngs"] - s["brokenPngs"])
        if s["brokenPngs"]:
            found.problem(f"cell {s['index']}: {s['brokenPngs']} figure(s) did not load")
    for i in expected.figures:
        if shown[i]["pngs"] == 0:
            found.problem(f"cell {i}: no figure on the page")


def _check_explorers(page: Page, path: str, found: Findings, shots: Path, name: str) -> None:
    for explorer in page.evaluate(JS_EXPLORERS, path):
        found.add("explorers")
        root = page.locator(f'[data-idem-view="{explorer["view"]}"]')
        controls = explorer["controls"]
        for n, control in enumerate(controls):
            _change(page, path, root, control, explorer["cell"], found, last=n == len(controls) - 1)
        cell = page.locator(f'[data-idem-cell="{explorer["cell"]}"]')
        target = shots / f"{name}.widget-{explorer['cell']}.png"
        cell.scroll_into_view_if_needed()
        images_drawn(page, cell)
        cell.screenshot(path=str(target))
        found.screenshots.append(target)


def _shown(root: Any) -> str:
    return str(root.evaluate(JS_SHOWN))


def _change(page: Page, path: str, root: Any, control: dict[str, str], cell: int, found: Findings,
            last: bool = False) -> None:
    """From the explorer's current settings, move one control to each other value in turn until
    what the explorer shows changes; then put the control back (unless it is the `last`).

    A control passes when some other value of it changes the view (two settings may rightly
    show the same outcome); it fails when no value does.
    """
    element = page.locator(f'[data-idem-control="{control["id"]}"]')
    label = f"{control['label']} ({control['kind']})"
    original, tried = _current(element, control["kind"]), []
    for choice in _choices(element, control["kind"]):
        before = _shown(root)  # the kernel is idle: the run, or the previous change, has settled
        value = _choose(element, control["kind"], choice)
        tried.append(value)
        changed = _wait_for_change(page, path, root, before)
        wait_kernel_idle(page, path)
        after = _shown(root)
        for trace in root.evaluate(JS_TRACEBACKS):
            found.problem(f"cell {cell}: after changing {label} to {value!r} the widget shows a traceback "
                          f"ending {_last_line(trace)!r}")
        if changed and after != before:
            found.add("controls_changed")
            found.changes.append(f"cell {cell} {label} -> {value}: {_first_line(before)!r} "
                                 f"became {_first_line(after)!r}")
            break
    else:
        if tried:
            found.problem(f"cell {cell}: changing {label} to {' or '.join(map(repr, tried))} did not change "
                          f"what the widget shows (still {_first_line(_shown(root))!r})")
        else:
            found.add("controls_skipped")
    if tried and control["kind"] == "slider":
        original = -choice  # one arrow step back
    if tried and original is not None and not last:
        before = _shown(root)
        _choose(element, control["kind"], original)
        _wait_for_change(page, path, root, before)
        wait_kernel_idle(page, path)


def _current(element: Any, kind: str) -> int | None:
    """The index of the control's present value, to put it back; None when it cannot be put back."""
    if kind == "select":
        values = [o.get_attribute("value") for o in element.locator("option").all()]
        current = element.input_value()
        return values.index(current) if current in values else None
    if kind in ("toggles", "radios"):
        for i, option in enumerate(element.locator("button, input").all()):
            if "mod-active" in (option.get_attribute("class") or "") or (
                    option.get_attribute("type") == "radio" and option.is_checked()):
                return i
        return None
    return 0 if kind in ("checkbox", "toggle") else None


def _choices(element: Any, kind: str) -> list[int]:
    """Indexes of the other values a control can take, the furthest first; [] if it cannot move."""
    if kind == "select":
        if element.is_disabled():
            return []
        values = [o.get_attribute("value") for o in element.locator("option").all()]
        current = element.input_value()
        return [i for i in reversed(range(len(values))) if values[i] != current]
    if kind in ("toggles", "radios"):
        options = element.locator("button, input").all()
        return [i for i in reversed(range(len(options)))
                if not options[i].is_disabled() and "mod-active" not in (options[i].get_attribute("class") or "")
                and not (options[i].get_attribute("type") == "radio" and options[i].is_checked())]
    if kind in ("checkbox", "toggle"):
        return [] if element.is_disabled() else [0]
    if kind == "slider":
        now, top = element.get_attribute("aria-valuenow"), element.get_attribute("aria-valuemax")
        return [-1] if now is not None and now == top else [1]
    return []


def _choose(element: Any, kind: str, choice: int) -> str:
    """Set a control the way a reader would (select, click, arrow key); the new value's label."""
    if kind == "select":
        option = element.locator("option").nth(choice)
        element.select_option(value=option.get_attribute("value"))
        return option.inner_text()
    if kind in ("toggles", "radios"):
        option = element.locator("button, input").nth(choice)
        text = option.inner_text() if kind == "toggles" else option.get_attribute("value")
        option.click()
        return text or str(choice)
    if kind == "slider":
        element.focus()
        element.press("ArrowRight" if choice > 0 else "ArrowLeft")
        return str(element.get_attribute("aria-valuenow"))
    element.click()
    return "toggled"


def _wait_for_change(page: Page, path: str, root: Any, before: str) -> bool:
    """True once the explorer shows something else; False after WIDGET_TIMEOUT, or once the
    kernel has sat idle for QUIET seconds without the view changing (the callback is done)."""
    deadline = time.monotonic() + WIDGET_TIMEOUT
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        if _shown(root) != before:
            return True
        state = page.evaluate(JS_RUN_STATE, path)
        if state["status"] == "idle" and not state["busy"]:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= QUIET:
                return _shown(root) != before
        else:
            quiet_since = None
        time.sleep(0.1)
    return False


def _first_line(shown: str) -> str:
    """A readable digest of what an explorer shows: its text in one line, images by hash."""
    text = " ".join(shown.split())
    return text[:90] + ("" if len(text) <= 90 else "…") + f" #{hashlib.sha1(shown.encode()).hexdigest()[:8]}"


def _check_after_interaction(page: Page, path: str, found: Findings) -> None:
    """Tracebacks and widget errors anywhere on the page, including inside widget outputs."""
    wait_kernel_idle(page, path)
    reported = {int(p.split("cell ", 1)[1].split()[0]) for p in found.problems if " shows an error: " in p}
    for s in page.evaluate(JS_RENDERED, path):
        if s["widgetErrors"]:
            found.problem(f"cell {s['index']}: shows 'Error displaying widget'")
        for trace in s["tracebacks"] if s["index"] not in reported else []:
            found.problem(f"cell {s['index']}: shows a traceback ending {_last_line(trace)!r}")


def _last_line(trace: str) -> str:
    """The exception line of a traceback ("ValueError: ..."), else its last line."""
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line)]
    return (named or lines or [""])[-1][:200]


JS_IMAGES_DRAWN = """(node) => Array.from(node.querySelectorAll('img')).every((im) => im.complete && im.naturalWidth > 0)"""
JS_TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def images_drawn(page: Page, target: Any, timeout: float = RENDER_TIMEOUT) -> bool:
    """Wait until every image under `target` (a locator) is decoded and painted."""
    drawn = bool(wait_until(lambda: target.evaluate(JS_IMAGES_DRAWN), timeout, 0.1))
    page.evaluate(JS_TWO_FRAMES)
    time.sleep(0.2)
    return drawn


def screenshot(page: Page, path: str, target: Path) -> Path:
    """The notebook, top to bottom: the viewport grows to the notebook's height for one capture."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        height = int(page.evaluate(JS_NOTEBOOK_HEIGHT, path))
        page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], min(height, MAX_SHOT_HEIGHT))})
        page.evaluate(js("const p = panelAt(arg); const o = p.node.querySelector('.jp-WindowedPanel-outer'); if (o) o.scrollTop = 0; return true;"), path)
        images_drawn(page, page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first)
        page.screenshot(path=str(target))
    except PlaywrightError:
        try:
            page.screenshot(path=str(target))
        except PlaywrightError:
            pass
    finally:
        try:
            page.set_viewport_size(VIEWPORT)
        except PlaywrightError:
            pass
    return target


FINDINGS = pytest.StashKey[list[Findings]]()


def record(request: pytest.FixtureRequest, found: Findings) -> None:
    """Keep the findings for the summary, and attach screenshots and changes to the test report."""
    request.config.stash.setdefault(FINDINGS, []).append(found)
    for shot in found.screenshots:
        request.node.user_properties.append(("screenshot", str(shot)))
    request.node.add_report_section("call", "screenshots", "\n".join(str(s) for s in found.screenshots))
    if found.changes:
        request.node.add_report_section("call", "explorer changes", "\n".join(found.changes))
    if found.server_errors:
        request.node.add_report_section("call", "jupyterlab server errors", "\n".join(found.server_errors))


def close_all(page: Page) -> None:
    """Close every open document without saving (the server refuses saves anyway)."""
    try:
        page.evaluate(JS_CLOSE, None)
    except PlaywrightError:
        pass
