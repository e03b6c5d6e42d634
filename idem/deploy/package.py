"""What ships to Lambda: idem's core, and nothing else.

The core is idem/__init__.py and the idem/core/ package with its subfolders (handlers/,
reconcile/): the standard library and boto3 only. The local AWS and what runs on it (idem/sim, explore, cost, lessons:
moto), idem/views/ (pandas, widgets), the command line (idem/cli/, idem/console.py, idem/__main__.py) and idem/deploy (this tool) stay behind, as do notebooks,
tests and the virtualenv.

`python -m idem.deploy.package [--demo] DIR` stages the core into DIR (with --demo, the demo's
failure wrapper too); `sam build` calls it through function/Makefile, so `sam build` and
`python -m idem deploy` ship the same core.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../idem
CORE = "core"  # the folder that ships, inside the package
#: The deploy demo's failure wrapper (idem/demo_failure.py): shipped beside the core only in the
#: demo's artifact, for its handler setting when FailurePoint is not `none`.
DEMO_WRAPPER = "demo_failure.py"
#: Fixed timestamp for zip entries, so the same source gives the same zip bytes.
ZIP_DATE = (2026, 1, 1, 0, 0, 0)


def core_files(package_dir: Path = PACKAGE_DIR, demo: bool = False) -> list[Path]:
    """The files that ship, relative to the package's parent (e.g. idem/core/entry.py), sorted;
    with `demo`, the deploy demo's failure wrapper too."""
    if not (package_dir / CORE / "entry.py").exists():
        raise FileNotFoundError(f"{package_dir} has no {CORE}/entry.py: is this idem's package folder?")
    # (the handler's own tests, idem/core/handlers/test_keyed.py, ship with the copy, not to Lambda)
    found = [package_dir / "__init__.py", *(p for p in (package_dir / CORE).rglob("*.py") if not p.name.startswith("test_"))]
    if demo:
        found.append(package_dir / DEMO_WRAPPER)
    return sorted(p.relative_to(package_dir.parent) for p in found)


def stage(dest: Path, package_dir: Path = PACKAGE_DIR, demo: bool = False) -> list[Path]:
    """Copy the core into dest/ (as dest/idem/...), with the demo's failure wrapper if `demo`
    (`IDEM_DEMO=1 sam build`). Returns the files written."""
    dest = Path(dest)
    target = dest / package_dir.name
    if target.exists():
        shutil.rmtree(target)
    written = []
    for rel in core_files(package_dir, demo):
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_dir.parent / rel, out)
        written.append(out)
    return written


def build_zip(dest_zip: Path, package_dir: Path = PACKAGE_DIR, demo: bool = False) -> Path:
    """The deployment package: a zip with idem/ at its root, byte-for-byte reproducible."""
    dest_zip = Path(dest_zip)
    dest_zip.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest_zip, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel in core_files(package_dir, demo):
            info = zipfile.ZipInfo(rel.as_posix(), date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (package_dir.parent / rel).read_bytes())
    return dest_zip


def zip_bytes(demo: bool = False) -> bytes:
    """The deployment package's bytes, as build_zip writes them, ready for an S3 upload."""
    with tempfile.TemporaryDirectory() as scratch:
        return build_zip(Path(scratch) / "core.zip", demo=demo).read_bytes()


def main(argv: list[str]) -> int:
    demo = argv[:1] == ["--demo"]
    args = argv[1:] if demo else argv
    if len(args) != 1:
        print("usage: python -m idem.deploy.package [--demo] DIR  (stages idem's core into DIR)",
              file=sys.stderr)
        return 2
    written = stage(Path(args[0]), demo=demo)
    what = "idem's core and the demo's failure wrapper" if demo else "idem's core"
    print(f"staged {len(written)} files ({what}) into {args[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
