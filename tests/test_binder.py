"""Binder's build, rehearsed: a fresh environment made only from environment.yml runs every chapter.

On Binder, repo2docker installs environment.yml into the environment its Jupyter server runs in.
That server (JupyterLab, notebook, jupyter_server) comes from Binder's base image and runs no
chapter code; the kernel and everything a chapter imports must come from environment.yml (the
`workbook` extra brings ipykernel for that reason). So this test:

1. reads environment.yml: the Python version and the pip lines;
2. makes a venv with that Python (`python3.X -m venv`) and runs `pip install -U <the pip lines>`
   from the repository root, as mamba does on Binder (see the comment in environment.yml);
3. checks that the venv holds exactly the pinned distributions, each at the version CI's own
   environment (the one running this test) has: nothing CI did not test;
4. runs every chapter with nbclient, which stands in for Binder's server (it lives in CI's
   environment), on a kernel started from the new venv, and fails on any cell error.

What it cannot rehearse: Binder's JupyterLab itself (4.4 in repo2docker's current lock), which
renders the chapters; the browser test covers rendering on the JupyterLab of `make lab`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from binder import Environment  # noqa: E402

pytestmark = pytest.mark.binder

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
BOOTSTRAP = {"pip", "setuptools", "wheel"}  # what `python -m venv` puts there; conda's on Binder
PROJECT = "charged-twice"  # the distribution; its import name is idem
INSTALL_TIMEOUT = 600
CELL_TIMEOUT = 300
# Never let a rehearsal reach real AWS, a caller's PYTHONPATH or a caller's virtualenv.
DROPPED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "IDEM_REAL_AWS", "AWS_PROFILE",
           "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

# What the kernel's Python reports about its environment, as JSON.
INVENTORY = """
import json, sys
from importlib import metadata
import idem
print(json.dumps({
    "version": list(sys.version_info[:2]),
    "idem": idem.__file__,
    "dists": {d.metadata["Name"]: d.version for d in metadata.distributions()},
}))
"""


def clean_env(venv: Path) -> dict[str, str]:
    """The environment for pip and the kernel: this one, minus anything that leaks in from CI's."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def interpreter(version: str) -> Path:
    """A Python X.Y for environment.yml's `python=X.Y` (tools/find_python.sh: PATH, then pyenv's
    builds); skipped (failed under CI) when there is none."""
    found = subprocess.run([str(ROOT / "tools" / "find_python.sh"), version], capture_output=True, text=True)
    if found.returncode != 0:
        why = f"environment.yml asks for Python {version}: {found.stderr.strip()}"
        if os.environ.get("IDEM_REQUIRE_BINDER_TEST"):
            pytest.fail(why)
        pytest.skip(why)
    return Path(found.stdout.strip())


@pytest.fixture(scope="module")
def binder_venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A venv built from environment.yml alone; its inventory and how long each step took."""
    environment = Environment.read()
    venv = tmp_path_factory.mktemp("binder") / "venv"
    python = venv / "bin" / "python"
    started = time.monotonic()
    subprocess.run([str(interpreter(environment.python)), "-m", "venv", str(venv)], check=True,
                   env=clean_env(venv), timeout=120)
    made = time.monotonic()
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-input", "-U", *environment.pip_arguments()],
                          cwd=ROOT, env=clean_env(venv), capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    installed = time.monotonic()
    if done.returncode != 0:
        pytest.fail("pip could not install environment.yml's pip lines "
                    f"({' '.join(environment.pip)}):\n{_errors(done.stderr + done.stdout)}")
    inventory = subprocess.run([str(python), "-c", INVENTORY], cwd=ROOT / "notebooks", env=clean_env(venv),
                               capture_output=True, text=True, check=True, timeout=120)
    print(f"binder venv: venv {made - started:.1f} s, pip install {installed - made:.1f} s")
    return {"venv": venv, "python": python, "environment": environment, **json.loads(inventory.stdout)}


def _printed(cell) -> str:
    """What a failed cell printed before it failed (its last lines), to tell why."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    return ("\n    printed: " + text[-1500:].replace("\n", "\n    ")) if text.strip() else ""


def _errors(output: str) -> str:
    """pip's output without the harmless warnings this machine's global config causes."""
    lines = [line for line in output.splitlines() if "is ignored" not in line and line.strip()]
    return "\n".join(lines[-40:])


def ci_versions() -> dict[str, str]:
    """canonical name -> version, for the environment running this test (CI's .venv)."""
    return {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}


def pins(environment: Environment) -> dict[str, str]:
    """canonical name -> version, from the constraints files environment.yml names."""
    found = {}
    for path in environment.constraint_files():
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                name, version = line.split("==")
                found[canonicalize_name(name)] = version
    return found


def test_binder_python_is_the_one_environment_yml_names(binder_venv):
    assert ".".join(map(str, binder_venv["version"])) == binder_venv["environment"].python


def test_binder_installs_this_repository_editable(binder_venv):
    assert Path(binder_venv["idem"]).resolve().is_relative_to(ROOT), binder_venv["idem"]


def test_binder_installs_exactly_what_ci_tested(binder_venv):
    installed = {canonicalize_name(k): v for k, v in binder_venv["dists"].items()}
    installed = {k: v for k, v in installed.items() if k not in BOOTSTRAP | {PROJECT}}
    ci = ci_versions()
    untested = {k: v for k, v in installed.items() if ci.get(k) != v}
    assert not untested, "environment.yml installs what CI did not test (name: Binder's version / CI's): " + \
        ", ".join(f"{k}: {v} / {ci.get(k, 'absent')}" for k, v in sorted(untested.items()))
    pinned = pins(binder_venv["environment"])
    assert set(installed) == set(pinned), (
        f"installed but not pinned: {sorted(set(installed) - set(pinned))}; "
        f"pinned but not installed: {sorted(set(pinned) - set(installed))}")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_in_the_binder_environment(binder_venv, chapter: Path, tmp_path: Path):
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    spec = tmp_path / "kernels" / "binder"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(binder_venv["python"]), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Binder rehearsal", "language": "python"}))
    manager = KernelManager(kernel_name="binder",
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]))
    notebook = nbformat.read(chapter, as_version=4)
    # Run in a folder of its own: a chapter writes files next to itself (chapter 11's scratch/),
    # and nbval runs the same chapter in notebooks/ at the same time on another worker.
    workdir = tmp_path / "notebooks"
    workdir.mkdir()
    client = NotebookClient(notebook, km=manager, timeout=CELL_TIMEOUT, allow_errors=True,
                            resources={"metadata": {"path": str(workdir)}})
    client.execute(env=clean_env(binder_venv["venv"]))
    errors = [f"cell {i}: {o.ename}: {o.evalue}{_printed(c)}" for i, c in enumerate(notebook.cells)
              if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{chapter.name} fails in Binder's environment:\n" + "\n".join(errors)
