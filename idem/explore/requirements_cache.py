"""`--install-requirements`: a function's `requirements.txt`, and its Layers', installed once into a
cached folder, then on the check's sys.path as `--python-path` folders are.

On Lambda a function imports what `sam build` installed beside its code from its
`requirements.txt`, and what its Layers hold under /opt/python
(https://docs.aws.amazon.com/lambda/latest/dg/python-package.html,
https://docs.aws.amazon.com/lambda/latest/dg/packaging-layers.html). The check builds the same
once: `pip install -r requirements.txt --target DIR`, with this Python and pip as the machine
configures them (its index, its find-links), into `CACHE/<hash>/`, where the hash is of the file's
bytes and this Python's version. Later checks of the same file reuse it, offline. A Layer declared
in the template (`AWS::Serverless::LayerVersion` with `ContentUri`, `AWS::Lambda::LayerVersion`
with a local `Content`) gives its folder's `python/`, or its `requirements.txt` installed the same
way; a Layer named by an ARN cannot be read, and is named in one line with `--python-path`.
A requirement pip cannot install ends the check (exit 2) in one line: the file, pip's own reason,
and what to do instead.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: Where the installed folders are kept: $IDEM_CHECK_CACHE, else ~/.cache/idem-check.
CACHE_ENV = "IDEM_CHECK_CACHE"
DONE = ".idem-complete"  # written last: a folder without it is an install that did not finish


class RequirementsError(ValueError):
    """A requirements file pip could not install, or a Layer the check cannot read (exit 2)."""


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "idem-check") / "requirements"


def key_of(requirements: Path) -> str:
    """The cache folder's name: the file's bytes and this Python's version (major.minor)."""
    digest = hashlib.sha256(requirements.read_bytes())
    digest.update(f"\npython{sys.version_info.major}.{sys.version_info.minor}".encode())
    return digest.hexdigest()[:32]


def installed(requirements: Path, root: Path | None = None) -> Path:
    """The folder `requirements` is installed in: the cached one, or a new install, made whole
    before it is named (a half-made one is never reused)."""
    root = root or cache_root()
    folder = root / key_of(requirements)
    if (folder / DONE).is_file():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f"{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
               "--target", str(partial), "-r", str(requirements)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=requirements.parent)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith("ERROR:")), lines[-1] if lines else "no output")
        raise RequirementsError(
            f"--install-requirements: pip could not install {requirements} ({reason[:300]}): install its "
            f"packages into a folder yourself (pip install -r {requirements.name} -t DIR) and give --python-path DIR")
    (partial / DONE).write_text(f"{requirements}\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def folders(task_root: str, layers: list[str], root: Path | None = None) -> list[str]:
    """The folders to put on sys.path for the function at `task_root` and its `layers` (the
    Layers' folders, or ARNs, as the template declares them): each requirements.txt installed,
    each layer's python/ folder as it is."""
    found = []
    requirements = Path(task_root) / "requirements.txt"
    if requirements.is_file():
        found.append(str(installed(requirements, root)))
    for layer in layers:
        if layer.startswith("arn:"):
            raise RequirementsError(
                f"--install-requirements: the function's Layer {layer} is named by its ARN, which the check "
                "cannot read: unpack its python/ folder and give --python-path DIR")
        folder = Path(layer)
        if (folder / "python").is_dir():
            found.append(str(folder / "python"))
        if (folder / "requirements.txt").is_file():
            found.append(str(installed(folder / "requirements.txt", root)))
        if not (folder / "python").is_dir() and not (folder / "requirements.txt").is_file():
            raise RequirementsError(f"--install-requirements: the function's Layer folder {folder} holds neither "
                                    "python/ nor requirements.txt: give its packages with --python-path DIR")
    return found
