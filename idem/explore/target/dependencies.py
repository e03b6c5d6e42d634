"""A function's own dependencies: where the check finds them, and what it says when one is missing.

On Lambda a function imports what its deployment package holds (`requirements.txt` installed
beside its code by `sam build`) and what its Layers hold (under /opt/python)
(https://docs.aws.amazon.com/lambda/latest/dg/python-package.html,
https://docs.aws.amazon.com/lambda/latest/dg/packaging-layers.html). The check runs it in its own
Python: a folder holding those packages is given with `--python-path DIR` (repeatable; after the
function's folder on sys.path, as a layer is). A module it cannot import ends the check in one line
that names the module, the function's requirements.txt when there is one, and the option.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

MISSING = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")


def add_paths(paths: list[str]) -> None:
    """Put the given folders on sys.path, after the function's own (the first entry)."""
    for n, path in enumerate(paths, start=1):
        if path not in sys.path:
            sys.path.insert(n, path)


def explain(message: str, task_root: str, paths: list[str]) -> str:
    """`message`, or, when it is a module the function cannot import, what to do about it."""
    found = MISSING.search(message)
    if not found:
        return message
    module = found.group(1).split(".")[0]
    requirements = Path(task_root) / "requirements.txt"
    listed = ""
    if requirements.is_file():
        names = [line.strip() for line in requirements.read_text(encoding="utf-8", errors="replace").splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        listed = f"; its {requirements} lists {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}"
    where = f" (looked in --python-path {', '.join(paths)} too)" if paths else ""
    return (f"the function imports {module}, which is not installed where the check runs{where}{listed}: "
            f"install its dependencies into a folder (pip install -r requirements.txt -t DIR, or unpack its "
            f"Layer's python/ folder there) and give --python-path DIR"
            + (", or let the check install them once, into a cache: --install-requirements" if listed else ""))


def shadowing(task_root: str) -> list[tuple[str, str]]:
    """The function's own top-level modules (a NAME.py or a NAME/ package in its folder, not one a
    `*.dist-info` there installed) named as a package installed where the check runs: (name, the
    distribution). The check runs on some of them (moto's `responses`, `yaml`, `werkzeug`...) in the
    function's own process, so one name cannot be both; on Lambda the function's own is imported."""
    from importlib.metadata import packages_distributions

    root = Path(task_root)
    vendored = {line.strip().split("/")[0].split(".")[0] for info in root.glob("*.dist-info")
                for name in ("top_level.txt", "RECORD") if (info / name).is_file()
                for line in (info / name).read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()}
    own = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    installed = packages_distributions()
    return sorted((name, installed[name][0]) for name in own - vendored if name in installed)


def shadowed_message(task_root: str) -> str:
    """One sentence for an error the function's own module names caused, or "" where there are none."""
    names = shadowing(task_root)
    if not names:
        return ""
    listed = ", ".join(f"{name} (the package of {dist})" for name, dist in names)
    return (f"the function's folder {task_root} has its own module named as a package the check itself runs on: "
            f"{listed}. The check runs the function in its own process, where one name is one module, so it "
            "cannot load both (on Lambda the function's own is imported). Rename the function's module "
            "to check it")
