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
A requirement pip cannot install ends the check (exit 2) in one line: the requirement, the file,
why (no index reachable from here, or none that has it), pip's own reason, and the option to give
the packages instead (`--python-path`); never a traceback.

What is installed is for what runs the handler here: this Python, on this machine's platform
(`host`), as pip picks wheels for it. Lambda runs the template's Runtime on its Architectures
(x86_64 or arm64, Linux: https://docs.aws.amazon.com/lambda/latest/dg/foundation-arch.html), and
`sam build` installs for that. A package built only for Lambda's platform, or one that behaves
otherwise there, is not what this check runs; the report says which platform it installed for
(`platform_note`).
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
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
    partial = root / f"{folder.name}.partial-{os.getpid()}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
                   "--target", str(partial), "-r", str(requirements)]
        done = subprocess.run(command, capture_output=True, text=True, cwd=requirements.parent)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise RequirementsError(refusal(requirements, done.stderr or done.stdout))
        (partial / DONE).write_text(f"{requirements}\n")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise RequirementsError(f"--install-requirements: cannot install {requirements} into {root} "
                                f"({error.strerror or error}): set {CACHE_ENV} to a folder you can write, or "
                                "give the packages with --python-path DIR") from None
    return folder


#: pip's words for a requirement it could not get, and for an index it could not reach.
_WHICH = (re.compile(r"No matching distribution found for (\S+)"),
          re.compile(r"Could not find a version that satisfies the requirement (\S+)"),
          re.compile(r"Invalid requirement: '([^']+)'"))
_OFFLINE = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
            "Network is unreachable", "Could not fetch URL", "ProxyError", "ConnectTimeoutError")


def refusal(requirements: Path, output: str) -> str:
    """The one line that ends the check when pip could not install `requirements` (its `output`)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    reason = next((line for line in lines if line.startswith("ERROR:")), lines[-1] if lines else "no output")
    which = next((m.group(1) for pattern in _WHICH for m in [pattern.search(output)] if m), "")
    offline = any(word in output for word in _OFFLINE)
    why = ("no package index answered from here (offline)" if offline
           else "neither the index nor the find-links pip is configured with has it")
    what = f"requirement {which} of {requirements}" if which else f"{requirements}"
    return (f"--install-requirements: pip could not install {what}: {why} ({reason[:300]}): install its "
            f"packages into a folder yourself (pip install -r {requirements.name} -t DIR) and give --python-path DIR")


def host() -> str:
    """What the packages are installed for: the Python that runs the handler here, and its platform."""
    return (f"{platform.python_implementation()} {sys.version_info.major}.{sys.version_info.minor}, "
            f"{platform.system().lower()} {platform.machine() or 'unknown'}")


def platform_note(runtime: str = "", architectures: list[str] | None = None) -> str:
    """One line for the report: what --install-requirements installed for, and what Lambda runs."""
    lam = (f"{runtime or 'a Runtime the template does not name'} on {', '.join(architectures or ['x86_64'])} (Linux)"
           if runtime or architectures else "the Runtime and Architectures it is deployed with (Linux)")
    return (f"requirements: installed for {host()}, the Python that runs the function here; Lambda runs it "
            f"on {lam}, and sam build installs for that: a package built only for one platform, or one "
            "that behaves otherwise there, is not what this check ran")


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
