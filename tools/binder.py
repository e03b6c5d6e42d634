"""Binder helpers: what environment.yml asks for, and this clone's Binder link.

    python tools/binder.py url    # the mybinder.org link and badge for `git remote get-url origin`

`Environment.read()` is what tests/test_binder.py and tests/test_project.py build from.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = ROOT / "environment.yml"
FIRST_CHAPTER = "notebooks/00_start_here.ipynb"
BADGE = "https://mybinder.org/badge_logo.svg"


@dataclass(frozen=True)
class Environment:
    """environment.yml, read the way repo2docker reads it: conda specs, then the pip section."""

    conda: list[str]
    pip: list[str]

    @classmethod
    def read(cls, path: Path = ENVIRONMENT) -> "Environment":
        import yaml  # only the tests need it; `url` runs without the project's environment

        conda: list[str] = []
        pip: list[str] = []
        for item in yaml.safe_load(path.read_text())["dependencies"]:
            if isinstance(item, dict):
                pip.extend(item.get("pip", []))
            else:
                conda.append(str(item))
        return cls(conda, pip)

    @property
    def python(self) -> str:
        """The `X.Y` Python version (repo2docker keeps major.minor of `python=...`)."""
        for spec in self.conda:
            match = re.match(r"python\s*=+\s*(\d+\.\d+)", spec)
            if match:
                return match.group(1)
        raise ValueError("environment.yml names no python=X.Y")

    def pip_arguments(self) -> list[str]:
        """The pip lines as `pip install` arguments. mamba writes them to a requirements file in
        the repository root and runs pip there; as arguments run from the same directory, the
        relative paths in them mean the same files."""
        return [word for line in self.pip for word in shlex.split(line, comments=True)]

    def constraint_files(self) -> list[Path]:
        """The files named by -c/--constraint lines, relative to the repository root."""
        words = self.pip_arguments()
        return [ROOT / words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-c", "--constraint")]


def github_path(remote: str) -> str | None:
    """`owner/repo` for a GitHub remote URL (https, ssh or scp-like), else None."""
    match = re.match(r"^(?:https?://|ssh://)?(?:[^@/]+@)?github\.com[:/]([^/]+)/(.+?)(?:\.git)?/?$", remote)
    return f"{match.group(1)}/{match.group(2)}" if match else None


def binder_url(remote: str) -> str:
    """The mybinder.org link that opens the first chapter in JupyterLab, for a clone's remote."""
    tail = f"HEAD?urlpath=lab/tree/{FIRST_CHAPTER}"
    path = github_path(remote)
    if path:
        return f"https://mybinder.org/v2/gh/{path}/{tail}"
    return f"https://mybinder.org/v2/git/{quote(remote, safe='')}/{tail}"


def origin() -> str | None:
    """`git remote get-url origin`, or None when the clone has no such remote."""
    done = subprocess.run(["git", "-C", str(ROOT), "remote", "get-url", "origin"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def main(argv: list[str]) -> int:
    if argv[:1] != ["url"]:
        raise SystemExit(__doc__)
    remote = origin()
    if remote is None:
        print("This clone has no git remote named origin, so there is no Binder link yet.\n"
              "Push it to a public GitHub repository, then the link is\n"
              f"  https://mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath=lab/tree/{FIRST_CHAPTER}")
        return 1
    url = binder_url(remote)
    print(url)
    print(f"[![Binder]({BADGE})]({url})")
    if github_path(remote) is None:
        print(f"(origin is {remote}, not GitHub: Binder can build it only if it is a public git URL)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
