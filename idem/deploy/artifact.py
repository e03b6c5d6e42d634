"""The production artifact: built once, tested, deployed unchanged.

`python -m idem.deploy.artifact build [--vendor DIR | --pip] OUT` writes into OUT:
- `idem-lambda.zip`: idem's core (package.core_files, the same bytes as the source the suite tests)
  and, with --vendor or --pip, Stripe's SDK and its dependencies for Lambda's platform, pinned by
  requirements/constraints.txt (the versions the suite ran). Byte-for-byte reproducible: sorted
  entries, fixed dates and modes, no __pycache__.
- `idem-lambda.zip.sha256`: its SHA-256, hex (what CI tested, and what a deploy must match).
- `template.yaml`: template.yaml with each function's `CodeUri: function/` replaced by the zip, so
  `sam deploy --template-file OUT/template.yaml` uploads that file as it is: the SAM CLI zips a
  folder but uploads a local file unchanged (samcli/lib/package/utils.py, upload_local_artifacts;
  https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/deploy-upload-local-files.html).
  No `sam build` runs at deploy time.

`verify OUT --expect SHA` refuses (exit 1) a zip whose hash is not the tested one; `code-sha256 OUT`
prints the zip's hash as Lambda reports a function's CodeSha256 (base64 of the SHA-256 digest:
https://docs.aws.amazon.com/lambda/latest/api/API_FunctionConfiguration.html), to compare with
`aws lambda get-function-configuration --query CodeSha256` after the deploy.
"""
from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from .package import PACKAGE_DIR, ZIP_DATE, core_files

ROOT = PACKAGE_DIR.parent
ZIP_NAME = "idem-lambda.zip"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
#: What the functions import beyond the core and boto3 (the runtime's own): Stripe's SDK.
VENDORED = ("stripe",)
#: Lambda's platform for template.yaml's `Architectures: [arm64]`.
PLATFORM = "manylinux2014_aarch64"
#: What the template points `sam build` at; the deploy template points the same functions at the zip.
SOURCE_CODE_URI = "CodeUri: function/"


class ArtifactError(Exception):
    """The artifact is not what was tested, or cannot be built: one line."""


def runtime() -> str:
    """The functions' Lambda runtime, as template.yaml names it (python3.13): one for all of them."""
    from . import template as tp

    runtimes = {r["Properties"]["Runtime"] for r in tp.load()["Resources"].values()
                if r["Type"] == "AWS::Serverless::Function"}
    if len(runtimes) != 1:
        raise ArtifactError(f"template.yaml's functions name several runtimes ({sorted(runtimes)}): one artifact "
                            "needs one Python")
    return runtimes.pop()


def runtime_version() -> str:
    """`3.13` for python3.13."""
    return runtime().removeprefix("python")


def pip_command(target: Path, python: str = sys.executable) -> list[str]:
    """pip, putting Stripe's SDK and its dependencies for Lambda's runtime and platform into target,
    at the versions the suite ran (constraints.txt), wheels only."""
    return [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(target),
            "--platform", PLATFORM, "--implementation", "cp", "--python-version", runtime_version(),
            "--only-binary=:all:", "-c", str(CONSTRAINTS), *VENDORED]


def _vendored_files(vendor: Path) -> list[Path]:
    return sorted(p.relative_to(vendor) for p in vendor.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
                  and p.relative_to(vendor).parts[0] != "bin")


def build(out: Path, vendor: Path | None = None, demo: bool = False) -> Path:
    """Write OUT/idem-lambda.zip (and its .sha256 and the deploy template); return the zip."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries = [(rel.as_posix(), ROOT / rel) for rel in core_files(demo=demo)]
    if vendor is not None:
        clash = [rel for rel in _vendored_files(Path(vendor)) if rel.parts[0] == "idem"]
        if clash:
            raise ArtifactError(f"{vendor} holds an idem/ of its own ({clash[0]}): vendor Stripe's SDK only")
        entries += [(rel.as_posix(), Path(vendor) / rel) for rel in _vendored_files(Path(vendor))]
    zip_path = out / ZIP_NAME
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, source.read_bytes())
    (out / f"{ZIP_NAME}.sha256").write_text(sha256_hex(zip_path) + "\n")
    (out / "template.yaml").write_text(deploy_template())
    return zip_path


def deploy_template(source: str | None = None) -> str:
    """template.yaml with every function's code pointing at the zip beside it (CodeUri: idem-lambda.zip)."""
    text = (ROOT / "template.yaml").read_text() if source is None else source
    from . import template as tp

    functions = [name for name, r in tp.load()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    found = len(re.findall(rf"^\s+{re.escape(SOURCE_CODE_URI)}\s*$", text, re.M))
    if found != len(functions):
        raise ArtifactError(f"template.yaml has {found} `{SOURCE_CODE_URI}` lines for {len(functions)} functions: "
                            "every function must ship the one artifact")
    return re.sub(rf"^(\s+){re.escape(SOURCE_CODE_URI)}\s*$", rf"\1CodeUri: {ZIP_NAME}", text, flags=re.M)


def sha256_hex(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def code_sha256(path: Path) -> str:
    """The zip's hash as Lambda reports a function's CodeSha256: base64 of the SHA-256 digest."""
    return base64.b64encode(hashlib.sha256(Path(path).read_bytes()).digest()).decode()


def verify(out: Path, expect: str | None = None) -> str:
    """The zip's hash, if it is the one recorded beside it (and `expect`, when given); else ArtifactError."""
    zip_path = Path(out) / ZIP_NAME
    if not zip_path.is_file():
        raise ArtifactError(f"no {ZIP_NAME} in {out}: build it first (python -m idem.deploy.artifact build {out})")
    actual = sha256_hex(zip_path)
    recorded = (Path(out) / f"{ZIP_NAME}.sha256").read_text().strip()
    for what, wanted in (("recorded beside it", recorded), ("tested", expect)):
        if wanted is not None and actual != wanted:
            raise ArtifactError(f"{zip_path} is sha256 {actual}, not the {what} {wanted}: it is not the tested "
                                "artifact; nothing deployed")
    return actual


USAGE = ("usage: python -m idem.deploy.artifact build [--pip | --vendor DIR] [--demo] OUT | "
         "verify OUT [--expect SHA256] | code-sha256 OUT")


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["build"] and len(argv) >= 2:
            args, vendor, demo = argv[1:], None, False
            if "--demo" in args:
                args, demo = [a for a in args if a != "--demo"], True
            if args[0] == "--vendor" and len(args) == 3:
                vendor, args = Path(args[1]), args[2:]
            elif args[0] == "--pip" and len(args) == 2:
                vendor = Path(args[1]) / "vendor"
                subprocess.run(pip_command(vendor), check=True)
                args = args[1:]
            if len(args) != 1:
                print(USAGE, file=sys.stderr)
                return 2
            zip_path = build(Path(args[0]), vendor, demo)
            print(f"{zip_path}: sha256 {sha256_hex(zip_path)}")
            return 0
        if argv[:1] == ["verify"] and len(argv) in (2, 4) and (len(argv) == 2 or argv[2] == "--expect"):
            print(verify(Path(argv[1]), argv[3] if len(argv) == 4 else None))
            return 0
        if argv[:1] == ["code-sha256"] and len(argv) == 2:
            print(code_sha256(Path(argv[1]) / ZIP_NAME))
            return 0
    except (ArtifactError, subprocess.CalledProcessError) as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
