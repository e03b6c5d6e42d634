"""The artifact is built once, tested, and deployed unchanged (idem/deploy/artifact.py).

- Its idem/ files are, byte for byte, the source this suite tests; the Stripe SDK it vendors is
  the version the suite ran (requirements/constraints.txt), for Lambda's runtime and platform.
- It is reproducible, its SHA-256 is recorded beside it, and a zip that is not the tested one is
  refused; the deploy template points every function at that zip, which `sam deploy` uploads as is.
- It runs under the runtime's Python (template.yaml: python3.13), the one this suite and Binder run
  (one version: tests/test_project.py), in a process of its own with nothing but the zip on its path:
  every module compiles with warnings as errors and imports from the zip, and Stripe's SDK verifies a
  signed event and refuses a forged one.

In CI, IDEM_ARTIFACT=DIR names the artifact the deploy jobs will ship (built with --pip): these
tests then judge that one, and IDEM_REQUIRE_RUNTIME_PYTHON=1 makes a missing runtime Python a
failure rather than a skip.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from idem.deploy import artifact, package
from idem.deploy import template as tp
from test_deploy_server import server  # noqa: F401,F811 - the moto server fixture

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The artifact under test: CI's (IDEM_ARTIFACT), or one built here without the vendored SDK."""
    given = os.environ.get("IDEM_ARTIFACT")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("artifact")
    artifact.build(out)
    return out


def _runtime_python() -> str | None:
    """An interpreter of the runtime's version: IDEM_RUNTIME_PYTHON, this suite's own, or
    tools/find_python.sh's (PATH, then pyenv's builds)."""
    version = artifact.runtime_version()
    found = subprocess.run([str(ROOT / "tools" / "find_python.sh"), version], capture_output=True, text=True)
    candidates = [os.environ.get("IDEM_RUNTIME_PYTHON", ""), sys.executable, found.stdout.strip()]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def test_the_artifacts_idem_files_are_the_source_this_suite_tests_byte_for_byte(built):
    with zipfile.ZipFile(built / artifact.ZIP_NAME) as archive:
        shipped = {n: archive.read(n) for n in archive.namelist() if n.startswith("idem/")}
    demo = "idem/demo_failure.py" in shipped
    assert sorted(shipped) == [p.as_posix() for p in package.core_files(demo=demo)]
    assert {n: (ROOT / n).read_bytes() for n in shipped} == shipped


def test_the_artifact_is_reproducible_and_its_recorded_hash_is_checked_before_a_deploy(built, tmp_path):
    again = artifact.build(tmp_path / "again")
    ours = built / artifact.ZIP_NAME
    if not os.environ.get("IDEM_ARTIFACT"):
        assert again.read_bytes() == ours.read_bytes()
    tested = artifact.verify(built)
    assert tested == artifact.sha256_hex(ours) == (built / f"{artifact.ZIP_NAME}.sha256").read_text().strip()
    assert artifact.verify(built, expect=tested) == tested
    # A zip changed after the test (one byte of one file) is refused, and says so in one line.
    tampered = tmp_path / "tampered"
    shutil.copytree(built, tampered, ignore=shutil.ignore_patterns("vendor"))
    data = bytearray((tampered / artifact.ZIP_NAME).read_bytes())
    data[-30] ^= 1
    (tampered / artifact.ZIP_NAME).write_bytes(bytes(data))
    with pytest.raises(artifact.ArtifactError, match="not the recorded beside it"):
        artifact.verify(tampered)
    (tampered / f"{artifact.ZIP_NAME}.sha256").write_text(artifact.sha256_hex(tampered / artifact.ZIP_NAME))
    with pytest.raises(artifact.ArtifactError, match=f"not the tested {tested}"):
        artifact.verify(tampered, expect=tested)  # its own record rewritten: the tested hash still refuses it
    assert artifact.main(["verify", str(tampered), "--expect", tested]) == 1


def test_lambdas_code_sha256_is_the_base64_of_the_zips_digest(built):
    import base64

    code = artifact.code_sha256(built / artifact.ZIP_NAME)
    assert base64.b64decode(code).hex() == artifact.sha256_hex(built / artifact.ZIP_NAME)


def test_the_deploy_template_points_every_function_at_the_zip_and_changes_nothing_else(built):
    source = (ROOT / "template.yaml").read_text().splitlines()
    deployed = (built / "template.yaml").read_text().splitlines()
    assert len(source) == len(deployed)
    changed = [(a.strip(), b.strip()) for a, b in zip(source, deployed) if a != b]
    functions = [n for n, r in tp.load()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    assert changed == [("CodeUri: function/", f"CodeUri: {artifact.ZIP_NAME}")] * len(functions)
    with pytest.raises(artifact.ArtifactError, match="every function must ship the one artifact"):
        artifact.deploy_template("\n".join(source).replace("CodeUri: function/", "CodeUri: other/", 1))


def test_the_vendored_sdk_is_the_version_this_suite_ran_for_lambdas_runtime_and_platform(built):
    command = artifact.pip_command(Path("vendor"))
    assert command[command.index("--python-version") + 1] == artifact.runtime_version() == "3.13"
    assert command[command.index("--platform") + 1] == "manylinux2014_aarch64"
    assert tp.load()["Resources"][tp.FUNCTION]["Properties"]["Architectures"] == ["arm64"]
    assert "--only-binary=:all:" in command and command[command.index("-c") + 1] == str(artifact.CONSTRAINTS)
    pinned = re.search(r"^stripe==(\S+)$", artifact.CONSTRAINTS.read_text(), re.M).group(1)
    assert metadata.version("stripe") == pinned  # the SDK the suite ran is the one pinned for the artifact
    with zipfile.ZipFile(built / artifact.ZIP_NAME) as archive:
        infos = [n for n in archive.namelist() if re.match(r"stripe-[^/]+\.dist-info/METADATA$", n)]
    if os.environ.get("IDEM_ARTIFACT"):
        assert infos == [f"stripe-{pinned}.dist-info/METADATA"]  # CI's artifact carries exactly that SDK
    else:
        assert infos == []  # built here offline: the core only (the deploy jobs build with --pip)


_PROBE = r"""
import hashlib, hmac, importlib, json, sys, time, warnings, zipfile
zip_path = sys.argv[1]
sys.path.insert(0, zip_path)
warnings.filterwarnings("error", category=SyntaxWarning)  # 3.12: an invalid escape is a SyntaxWarning
warnings.filterwarnings("error", category=DeprecationWarning, module=r"idem(\.|$)")
archive = zipfile.ZipFile(zip_path)
names = [n for n in archive.namelist() if n.startswith("idem/") and n.endswith(".py")]
for name in names:
    compile(archive.read(name), name, "exec")
for name in names:
    module = importlib.import_module(name[:-3].replace("/", ".").removesuffix(".__init__"))
    assert module.__file__.startswith(zip_path), (name, module.__file__)
from idem.core import webhook
import stripe
secret, body = "whsec_probe", json.dumps({"id": "evt_1", "object": "event", "type": "charge.refunded",
                                          "data": {"object": {"id": "ch_1"}}})
at = int(time.time())
mac = hmac.new(secret.encode(), f"{at}.{body}".encode(), hashlib.sha256).hexdigest()
event = webhook.verified(body, f"t={at},v1={mac}", secret)
try:
    webhook.verified(body, f"t={at},v1={'0' * 64}", secret)
    forged = "accepted"
except ValueError:
    forged = "refused"
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "modules": len(names), "event": event["id"],
                  "forged": forged, "stripe": stripe.VERSION, "stripe_from_zip": stripe.__file__.startswith(zip_path)}))
"""


def test_the_artifact_runs_under_the_runtimes_python_not_only_this_suites(built):
    python = _runtime_python()
    if python is None:
        message = f"no python{artifact.runtime_version()} here to run the artifact under the runtime's Python"
        if os.environ.get("IDEM_REQUIRE_RUNTIME_PYTHON") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # boto3 is the runtime's own on Lambda; here the suite's (pure Python, as is Stripe's SDK when the
    # artifact does not carry it): behind the zip on the path, so the zip's own modules win.
    path = os.pathsep.join([str(built / artifact.ZIP_NAME), sysconfig.get_paths()["purelib"]])
    done = subprocess.run([python, "-s", "-c", _PROBE, str(built / artifact.ZIP_NAME)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert (seen["python"], seen["event"], seen["forged"]) == (artifact.runtime_version(), "evt_1", "refused")
    assert seen["modules"] == len(package.core_files())
    assert seen["stripe"] == metadata.version("stripe")
    assert seen["stripe_from_zip"] == bool(os.environ.get("IDEM_ARTIFACT"))


def test_the_deploy_workflow_ships_the_zip_the_suite_tested_and_checks_what_lambda_runs():
    from samtranslator.yaml_helper import yaml_parse

    flow = yaml_parse((ROOT / ".github/workflows/deploy.yml").read_text())
    jobs = flow["jobs"]
    test = jobs["test"]["steps"]
    (build,) = [s for s in test if s.get("id") == "artifact"]
    (suite,) = [s for s in test if "pytest" in s.get("run", "")]
    assert test.index(build) < test.index(suite) and "artifact build --pip dist" in build["run"]
    assert (suite["env"]["IDEM_ARTIFACT"], suite["env"]["IDEM_REQUIRE_RUNTIME_PYTHON"]) == ("dist", "1")
    python = [s for s in test if "setup-python" in s.get("uses", "")][0]["with"]["python-version"].split()
    assert artifact.runtime_version() in python  # the runtime's Python is there for the artifact's test
    assert set(jobs["test"]["outputs"]) == {"artifact_sha256", "code_sha256"}
    for name in ("demo", "prod-plan"):
        runs = "\n".join(s.get("run", "") for s in jobs[name]["steps"])
        assert "sam build" not in runs  # nothing is built at deploy time but the same zip, checked
        verify = runs.index('artifact verify dist --expect "$TESTED"')
        assert verify < runs.index("sam deploy") and "--template-file dist/template.yaml" in runs
        (checked,) = [s for s in jobs[name]["steps"] if "artifact verify" in s.get("run", "")]
        assert checked["env"]["TESTED"] == "${{ needs.test.outputs.artifact_sha256 }}"
        assert "test" in ([jobs[name]["needs"]] if isinstance(jobs[name]["needs"], str) else jobs[name]["needs"])
    (deployed,) = [s for s in jobs["prod"]["steps"] if "CodeSha256" in s.get("run", "")]
    assert deployed["env"]["CODE_SHA256"] == "${{ needs.test.outputs.code_sha256 }}"
    names = re.findall(r"\$\{AWS::StackName\}-(\w+)", "\n".join(
        str(r["Properties"].get("FunctionName")) for r in tp.load()["Resources"].values()
        if r["Type"] == "AWS::Serverless::Function"))
    assert all(f"idem-prod-{n}" in deployed["run"] for n in names) and len(names) == 3


SAM = ROOT / ".venv-sam" / "bin" / "sam"


@pytest.mark.skipif(not SAM.exists(), reason="the SAM CLI is not installed in .venv-sam (`make sam`)")
def test_sam_uploads_the_tested_zip_unchanged_for_every_function(built, server, tmp_path):  # noqa: F811
    """What `sam deploy --template-file dist/template.yaml` packages (the deploy jobs' command), on
    a moto server: one object, the three functions' code, byte for byte the tested zip."""
    import boto3

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=server, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1", SAM_CLI_TELEMETRY="0", HOME=str(tmp_path))
    s3 = boto3.client("s3", endpoint_url=server, region_name="us-east-1", aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    s3.create_bucket(Bucket="artifact-upload")
    done = subprocess.run([str(SAM), "package", "--template-file", str(built / "template.yaml"), "--s3-bucket",
                           "artifact-upload", "--output-template-file", str(tmp_path / "packaged.yaml")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    uris = set(re.findall(r"CodeUri: (s3://\S+)", (tmp_path / "packaged.yaml").read_text()))
    (uri,) = uris
    body = s3.get_object(Bucket="artifact-upload", Key=uri.rsplit("/", 1)[-1])["Body"].read()
    assert hashlib.sha256(body).hexdigest() == artifact.verify(built)


def test_the_suite_binder_ci_and_the_functions_run_one_python():
    """One version everywhere: the Makefile's PYTHON_VERSION is the Python running this suite, Binder's
    (environment.yml), every function's Runtime, the type checker's and the linter's target, and
    every setup-python in CI's workflows; a missing runtime Python fails the artifact's test in CI."""
    from samtranslator.yaml_helper import yaml_parse

    from test_project import Environment

    (version,) = re.findall(r"^PYTHON_VERSION := (\d+\.\d+)$", (ROOT / "Makefile").read_text(), re.M)
    assert "%d.%d" % sys.version_info[:2] == version
    assert Environment.read().python == version
    assert artifact.runtime() == f"python{version}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'python_version = "{version}"' in pyproject
    assert f'target-version = "py{version.replace(".", "")}"' in pyproject
    assert f'requires-python = ">={version}"' in pyproject
    assert f"--python-version {version}" in (ROOT / "function" / "Makefile").read_text()
    for workflow in ("ci.yml", "deploy.yml"):
        jobs = yaml_parse((ROOT / ".github/workflows" / workflow).read_text())["jobs"].values()
        setups = [s for job in jobs for s in job["steps"] if "setup-python" in s.get("uses", "")]
        assert setups and {str(s["with"]["python-version"]).strip() for s in setups} == {version}, workflow
    (job,) = yaml_parse((ROOT / ".github/workflows/ci.yml").read_text())["jobs"].values()
    (run,) = [s for s in job["steps"] if s.get("run") == "bash .ci/run"]
    assert run["env"]["IDEM_REQUIRE_RUNTIME_PYTHON"] == "1"
    action = yaml_parse((ROOT / "action.yml").read_text())
    assert action["inputs"]["python-version"]["default"] == version


def test_find_python_prints_a_working_interpreter_of_the_version_or_says_what_to_install():
    """The Makefile, .ci/run and tools/ci_*.sh find the one Python with tools/find_python.sh: a
    candidate is run, not trusted (pyenv's shim for an unselected version exists and fails)."""
    version = "%d.%d" % sys.version_info[:2]
    found = subprocess.run([str(ROOT / "tools" / "find_python.sh"), version], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    probe = subprocess.run([found.stdout.strip(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == version
    missing = subprocess.run([str(ROOT / "tools" / "find_python.sh"), "2.99"], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1 and "install Python 2.99" in missing.stderr
