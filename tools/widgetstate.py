"""Widget state stored with a notebook, made stable and readable without a kernel.

nbclient (with `store_widget_state=True`, nbclient/client.py `set_widgets_metadata`) writes every
widget model the kernel opened into `metadata.widgets["application/vnd.jupyter.widget-state+json"]`
({"state": {model_id: {"model_name", "model_module", "model_module_version", "state"}},
"version_major": 2, "version_minor": 0}), and each displayed widget's output carries its model id
in `application/vnd.jupyter.widget-view+json`. nbconvert's HTML (nbviewer) draws the views from
that state; JupyterLab's widget manager restores it on open but draws a stored view only in a
trusted notebook, and shows the output's `text/plain` otherwise (a fresh clone, Binder), as
GitHub does.

Model ids are the kernel's random comm ids, so `stable_widget_state`:
- keeps only the models a displayed view reaches (children, layouts, styles, nested outputs);
- renames them, in the order they are reached, to ids derived from the notebook's name, in the
  metadata and in every view output, so an unchanged chapter rebuilds byte for byte;
- replaces each view's `text/plain` (a truncated `VBox(children=(...` repr) with the explorer's
  settings, for viewers that show neither widgets nor their state.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any, Iterator

WIDGETS_KEY = "widgets"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
REFERENCE = re.compile(r"IPY_MODEL_([0-9a-f]{32})")
FALLBACK = "An explorer widget: run the chapter to use its controls."


def view_outputs(notebook: Any) -> Iterator[dict[str, Any]]:
    """Every output of a code cell that displays a widget view."""
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for output in cell.outputs:
                if VIEW_MIME in output.get("data", {}):
                    yield output


def _references(value: Any) -> Iterator[str]:
    """Model ids a model's state points at: IPY_MODEL_ strings and views nested in its outputs."""
    if isinstance(value, str):
        yield from REFERENCE.findall(value)
    elif isinstance(value, dict):
        if VIEW_MIME in value and isinstance(value[VIEW_MIME], dict):
            yield value[VIEW_MIME]["model_id"]
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def reachable(roots: list[str], state: dict[str, Any]) -> list[str]:
    """Model ids reached from `roots`, breadth first, each once; KeyError names a missing one."""
    order: list[str] = []
    queue = list(roots)
    while queue:
        model_id = queue.pop(0)
        if model_id in order:
            continue
        if model_id not in state:
            raise KeyError(f"widget model {model_id} is displayed or referenced but has no stored state")
        order.append(model_id)
        queue.extend(_references(state[model_id]["state"]))
    return order


def stable_id(name: str, number: int) -> str:
    """The `number`th model of notebook `name`: 32 hex digits, like a kernel's comm id."""
    return hashlib.sha256(f"{name}/widget/{number}".encode()).hexdigest()[:32]


def _rename(value: Any, names: dict[str, str]) -> Any:
    """`value` (JSON) with every old model id replaced by its new one."""
    text = json.dumps(value)
    text = re.sub(r"[0-9a-f]{32}", lambda m: names.get(m.group(0), m.group(0)), text)
    return json.loads(text)


def settings(model_id: str, state: dict[str, Any]) -> list[str]:
    """`description: value` for every control under a model, in display order."""
    model = state[model_id]["state"]
    found = []
    label = model.get("description")
    if label and "index" in model and "_options_labels" in model and model["index"] is not None:
        found.append(f"{label}: {model['_options_labels'][model['index']]}")
    elif label and "value" in model:
        found.append(f"{label}: {model['value']}")
    for child in model.get("children", []):
        found.extend(settings(child.removeprefix("IPY_MODEL_"), state))
    return found


def fallback_text(model_id: str, state: dict[str, Any], width: int = 100) -> str:
    """What a plain-text viewer shows for a widget view: what it is and how it is set, its
    settings folded after a `;` where the line would pass `width`."""
    shown = settings(model_id, state)
    if not shown:
        return FALLBACK
    rows, row = [], "Set to"
    for number, setting in enumerate(shown, 1):
        setting += "." if number == len(shown) else ";"
        if len(row) + 1 + len(setting) > width and row != "Set to":
            rows, row = rows + [row], "  " + setting
        else:
            row += " " + setting
    return "\n".join([FALLBACK, *rows, row])


def stable_widget_state(notebook: Any, widgets: dict[str, Any], name: str) -> dict[str, Any]:
    """The notebook's widget metadata, pruned and renamed; its view outputs renamed in place."""
    stored = widgets[STATE_MIME]
    roots = [output["data"][VIEW_MIME]["model_id"] for output in view_outputs(notebook)]
    order = reachable(roots, stored["state"])
    names = {old: stable_id(name, number) for number, old in enumerate(order)}
    state = {names[old]: _rename(stored["state"][old], names) for old in order}
    for output in view_outputs(notebook):
        view = copy.deepcopy(output["data"][VIEW_MIME])
        view["model_id"] = names[view["model_id"]]
        output["data"][VIEW_MIME] = view
        output["data"]["text/plain"] = fallback_text(view["model_id"], state)
    return {STATE_MIME: {"state": state, "version_major": stored["version_major"],
                         "version_minor": stored["version_minor"]}}
