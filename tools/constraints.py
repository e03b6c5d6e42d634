"""Pin what Binder installs to the versions CI's environment holds: requirements/constraints.txt.

    python tools/constraints.py write   # (re)write the file from this interpreter's environment
    python tools/constraints.py check   # exit 1 if the file differs from what `write` would write

Binder installs `-e .[workbook]` (see environment.yml) into an environment whose Jupyter server
comes from Binder's base image. The file pins every distribution that install can pull in: the
dependency closure of the project's core and its `workbook` extra, read from pyproject.toml and
walked through the installed metadata, at the version `pip freeze` reports in this environment
(`make constraints` runs it in .venv, the environment CI tests). Left out by construction: the
project itself, JupyterLab and its server stack (Binder's base owns them; pinning them here could
upgrade Binder's server), and the test tools. Markers are evaluated for this interpreter, which
must be Linux and the Python version environment.yml names, as Binder's is.
"""
from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "requirements" / "constraints.txt"
EXTRA = "workbook"
HEADER = """\
# Exactly the versions CI tested, for everything `pip install -e .[workbook]` can pull in.
# Written by `make constraints` from .venv (pip freeze); tests/test_project.py keeps it in step.
# Used by environment.yml (Binder) and by `make install`. Do not edit by hand.
# JupyterLab and its server are deliberately absent: on Binder they are the base image's own.
"""


def freeze() -> dict[str, str]:
    """canonical name -> `name==version` line, from `pip freeze` of this interpreter's environment."""
    done = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
                          capture_output=True, text=True, check=True)
    pins = {}
    for line in done.stdout.splitlines():
        if not line or line.startswith("#"):
            continue
        if "==" not in line:  # `name @ file:///...` and the like name a path on this machine
            raise SystemExit(f"pip freeze line {line!r} is not an index release; Binder cannot install it")
        pins[canonicalize_name(line.split("==", 1)[0])] = line.strip()
    return pins


def project() -> tuple[str, list[str], dict[str, list[str]]]:
    """The project's name, core requirements and extras, from pyproject.toml."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return table["name"], table["dependencies"], table.get("optional-dependencies", {})


def _wanted(requirement: Requirement, extras: set[str]) -> bool:
    """Whether a requirement applies here, for a distribution installed with `extras`."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


def closure(extra: str = EXTRA) -> set[str]:
    """Canonical names of every distribution `pip install .[extra]` installs, the project excluded."""
    name, core, extras = project()
    todo = [Requirement(r) for r in core + extras[extra]]
    seen: dict[str, set[str]] = {}
    while todo:
        requirement = todo.pop()
        key = canonicalize_name(requirement.name)
        if key == canonicalize_name(name):  # charged-twice[other] inside an extra
            todo.extend(Requirement(r) for e in requirement.extras for r in extras[e])
            continue
        wanted = set(requirement.extras)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, set()) | wanted
        try:
            found = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{requirement} is needed but not installed here: run `make install` first")
        for line in found.requires or []:
            child = Requirement(line)
            if _wanted(child, seen[key]):
                todo.append(child)
    return set(seen)


def render() -> str:
    """The constraints file's text: the header, then one `name==version` per line, by name."""
    pins = freeze()
    missing = sorted(closure() - set(pins))
    if missing:
        raise SystemExit(f"installed but missing from pip freeze: {', '.join(missing)}")
    return HEADER + "".join(f"{pins[key]}\n" for key in sorted(closure()))


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "write":
        text = render()
        TARGET.parent.mkdir(exist_ok=True)
        TARGET.write_text(text)
        print(f"wrote {TARGET.relative_to(ROOT)} ({len(text.splitlines()) - HEADER.count(chr(10))} pins)")
        return 0
    if command == "check":
        if TARGET.exists() and TARGET.read_text() == render():
            print(f"{TARGET.relative_to(ROOT)} matches this environment")
            return 0
        print(f"{TARGET.relative_to(ROOT)} differs from this environment: run `make constraints`")
        return 1
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
