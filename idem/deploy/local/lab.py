"""Chapter 09's explorer: deploy the stack on moto with chosen parameters, upload once.

Each call is a whole stack's life: create, fill what moto drops, one upload, teardown.
ipywidgets is imported only when the widget is built.
"""
from __future__ import annotations

from typing import Any

from .. import flow
from .moto_target import MotoDeployment


def try_stack(mode: str = "naive", failure_point: str = "after_charge", fail_times: str = "once",
              *, quiet: bool = True) -> flow.RunReport:
    """Deploy template.yaml on moto with these parameters, upload one order, tear down."""
    lines: list[str] = []
    deployment = MotoDeployment("idem-lab", say=lines.append if quiet else print)
    try:
        deployment.package()
        deployment.deploy(mode, {"FailurePoint": failure_point, "FailTimes": fail_times})
        deployment.fill_gaps()
        return deployment.upload("alice/order-lab.txt")
    finally:
        deployment.teardown()


def stack_explorer(mode: str = "naive", failure_point: str = "after_charge",
                   fail_times: str = "once") -> Any:
    """Three dropdowns, the template's parameters; each change redeploys and uploads."""
    import ipywidgets as widgets
    from IPython.display import display

    from ..template import load

    allowed = {name: p["AllowedValues"] for name, p in load()["Parameters"].items() if "AllowedValues" in p}
    label = {"description_width": "initial"}  # the parameter names in full, not cut off
    picks = {
        "mode": widgets.Dropdown(options=allowed["HandlerMode"], value=mode,
                                 description="HandlerMode", style=label),
        "failure_point": widgets.Dropdown(options=allowed["FailurePoint"], value=failure_point,
                                          description="FailurePoint", style=label),
        "fail_times": widgets.Dropdown(options=allowed["FailTimes"], value=fail_times,
                                       description="FailTimes", style=label),
    }
    shown = widgets.Output()

    def refresh(_: Any = None) -> None:
        picks["fail_times"].disabled = picks["failure_point"].value == "none"
        shown.clear_output(wait=True)
        with shown:
            report = try_stack(**{name: pick.value for name, pick in picks.items()})
            display(report.line())
            for line in report.attempts:
                display(line)

    for pick in picks.values():
        pick.observe(refresh, names="value")
    refresh()
    return widgets.VBox([widgets.HBox(list(picks.values())), shown])
