"""template.yaml: lint-clean, expandable, and granting exactly what the function uses;
and the package it deploys holds idem's core and nothing else."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from idem.deploy.aws_rules import calls
from idem.deploy import package
from idem.deploy import template as tp

ROOT = Path(__file__).resolve().parent.parent


DEMO = {"Profile": "demo", "HandlerMode": "keyed"}


@pytest.fixture(scope="module")
def expanded():
    """The template after the SAM transform, conditions not yet resolved."""
    return tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"), DEMO)


@pytest.fixture(scope="module")
def cfn(expanded):
    """The demo profile, as CloudFormation would create it (the deploy tool's stack)."""
    return tp.resolve(expanded, DEMO)


def test_cfn_lint_reports_nothing():
    """What `cfn-lint template.yaml` checks: errors and warnings (not informational hints).
    tests/test_production_profile.py adds the serverless rules, for each profile."""
    from cfnlint.api import ManualArgs, lint

    matches = lint((ROOT / "template.yaml").read_text(encoding="utf-8"),
                   config=ManualArgs(regions=["us-east-1", "eu-west-1"]))
    assert [str(m) for m in matches] == []


def test_function_runs_the_entry_point_with_the_settings_it_reads(expanded, cfn):
    # Production runs the handler to copy; the demo the entry point, unless it asks for a failure:
    # then its wrapper, outside the handler.
    assert expanded["Resources"][tp.FUNCTION]["Properties"]["Handler"] == {"Fn::If": [
        "IsProd", "idem.core.handlers.keyed.lambda_handler",
        {"Fn::If": ["DemoFailure", "idem.demo_failure.lambda_handler", "idem.core.entry.lambda_handler"]}]}
    props = cfn["Resources"][tp.FUNCTION]["Properties"]
    assert props["Timeout"] == 60  # idem/core/buffer.py timeout_for: a batch of 10 in one invocation
    assert int(props["Runtime"].removeprefix("python3.")) >= 11
    env = props["Environment"]["Variables"]
    code = (ROOT / "idem/core/settings.py").read_text()
    read = set(re.findall(r'env(?:\.get\(|, )"([A-Z_]+)"', code))
    # The demo's failure is read by whoever injects it, outside the function's code; the
    # Stripe key's parameter is prod's (the demo pays the stand-in).
    demo = {"FAILURE_POINT", "FAIL_TIMES"}
    # The handler to copy (production's) also checks its claim's TTL against the timeout, and
    # reads its money settings (docs/money_contract.md).
    keyed_reads = {"FUNCTION_TIMEOUT_SECONDS", "CURRENCIES", "MIN_AMOUNT_CENTS", "MAX_AMOUNT_CENTS"}
    assert all(name in (ROOT / "idem/core/handlers/keyed_settings.py").read_text() for name in keyed_reads)
    # ORDER_IDENTITY has a safe default (order-id, docs/one_charge_per_order.md); the stack sets it with its bucket policy.
    optional = {"ORDER_IDENTITY"} - set(env)
    assert (read - optional) | demo | keyed_reads == set(env), "the template sets exactly the variables the function reads"
    assert env["HANDLER_MODE"] == "keyed"
    assert tp.ref_name(env["LEDGER_TABLE"]) == "LedgerTable"  # by its name: an adopted ledger works the same
    assert env["FAILURE_POINT"] == "none"


def test_parameters_offer_every_handler_and_the_demo_failures():
    from idem.core.patterns import HANDLERS

    params = tp.load()["Parameters"]
    assert params["Profile"] == {"Type": "String", "Default": "prod", "AllowedValues": ["prod", "demo"],
                                 "Description": params["Profile"]["Description"]}
    assert params["HandlerMode"]["AllowedValues"] == list(HANDLERS)
    assert params["FailurePoint"]["AllowedValues"] == ["none", "at_charge", "after_charge"]
    assert "once" in params["FailTimes"]["AllowedValues"]


def test_async_invocations_retry_twice_then_go_to_the_queue(cfn):
    props = cfn["Resources"][f"{tp.FUNCTION}EventInvokeConfig"]["Properties"]
    assert props["MaximumRetryAttempts"] == 2
    assert tp.ref_name(props["FunctionName"]) == tp.FUNCTION
    assert tp.ref_name(props["DestinationConfig"]["OnFailure"]["Destination"]) == "FailureQueue"
    assert cfn["Resources"]["FailureQueue"]["Type"] == "AWS::SQS::Queue"


def test_bucket_is_versioned_and_notifies_the_function_without_a_cycle(cfn):
    bucket = cfn["Resources"]["UploadBucket"]
    props = bucket["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    notify = props["NotificationConfiguration"]["LambdaConfigurations"]
    assert sorted(n["Event"] for n in notify) == ["s3:ObjectCreated:CompleteMultipartUpload",
                                                  "s3:ObjectCreated:Post", "s3:ObjectCreated:Put"]
    # S3 invokes the alias its EventInvokeConfig configures (retries, maximum age, failure queue): one
    # on the alias does nothing for an unqualified invocation, which gets AWS's defaults and no
    # failure destination (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-lambda-eventinvokeconfig.html)
    (alias,) = {tp.ref_name(n["Function"]) for n in notify}
    assert cfn["Resources"][alias]["Type"] == "AWS::Lambda::Alias"
    assert tp.ref_name(cfn["Resources"][alias]["Properties"]["FunctionName"]) == tp.FUNCTION
    config = cfn["Resources"][f"{tp.FUNCTION}EventInvokeConfig"]["Properties"]
    assert config["Qualifier"] == cfn["Resources"][alias]["Properties"]["Name"]
    assert tp.ref_name(cfn["Resources"]["ChargeFunctionUploadPermission"]["Properties"]["FunctionName"]) == alias
    assert "Fn::Sub" in props["BucketName"], "a named bucket keeps the policy out of a cycle"
    role = str(cfn["Resources"]["ChargeFunctionRole"])
    assert "UploadBucket" not in role


def test_tables_are_on_demand_and_the_ledger_expires_records(cfn):
    tables = tp.resources_of_type(cfn, "AWS::DynamoDB::Table")
    assert set(tables) == {"LedgerTable", "ProviderTable"}
    assert all(t["Properties"]["BillingMode"] == "PAY_PER_REQUEST" for t in tables.values())
    ttl = tables["LedgerTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expires_at", "Enabled": True}


def test_role_grants_exactly_the_calls_the_function_makes(cfn):
    grants = tp.granted(cfn)
    assert grants == calls.required()
    assert not any(action.endswith((":Scan", ":*")) or (resource == "*" and not action.startswith("xray:"))
                   for action, resource in grants)
    untraced = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {**DEMO, "TracingMode": "PassThrough"})
    assert tp.granted(untraced) == calls.required(tracing=False)


def test_outputs_name_every_resource_a_reader_looks_at(cfn):
    assert {"BucketName", "LedgerTableName", "ProviderTableName", "FailureQueueUrl",
            "FunctionName"} <= set(cfn["Outputs"])


# -- the deployment package ---------------------------------------------------------------
def test_zip_holds_only_idems_core(tmp_path):
    with zipfile.ZipFile(package.build_zip(tmp_path / "core.zip")) as archive:
        names = archive.namelist()
        sources = {n: archive.read(n).decode() for n in names}
    assert {"idem/core/entry.py", "idem/core/handlers/keyed.py", "idem/core/ledger.py"} <= set(names)
    assert all(re.fullmatch(r"idem/(core/((handlers|reconcile)/)?)?[a-z_]+\.py", n) for n in names), names
    assert not [n for n in names if "boundary" in n or "fail" in n]  # no fault code ships
    with zipfile.ZipFile(package.build_zip(tmp_path / "demo.zip", demo=True)) as archive:
        assert set(archive.namelist()) - set(names) == {"idem/demo_failure.py"}
    assert not [n for n in names if "/local/" in n or "/deploy/" in n or "/views" in n]
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore", "idem"}
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {node.module.split(".")[0]}
            else:
                continue
            if re.search(r"handlers/keyed(_[a-z_]+)?\.py$", name):
                # The handler to copy imports its siblings by plain name when copied (`if COPIED:`);
                # the Stripe adapter, imported by keyed.make_provider only when the function
                # charges through Stripe (STRIPE_SECRET_PARAMETER set); the stack's entry never does.
                roots -= {Path(n).stem for n in names if "handlers/keyed" in n} | {"stripe"}
            if name.endswith("core/webhook.py"):  # WebhookFunction verifies with Stripe's SDK
                roots -= {"stripe"}
            assert roots <= allowed, f"{name} imports {roots - allowed}: it would not run on Lambda"


def test_zip_is_reproducible(tmp_path):
    first = package.build_zip(tmp_path / "a.zip").read_bytes()
    assert package.build_zip(tmp_path / "b.zip").read_bytes() == first


@pytest.mark.parametrize("function", [tp.FUNCTION, tp.RECONCILER])
@pytest.mark.parametrize("demo", [False, True])
def test_sam_build_stages_the_same_files_as_the_zip(tmp_path, function, demo):
    """template.yaml's CodeUri is function/, built by function/Makefile (BuildMethod makefile):
    the core only, and the demo's failure wrapper beside it only with IDEM_DEMO=1."""
    fn = tp.load()["Resources"][function]
    assert fn["Properties"]["CodeUri"] == "function/"
    assert fn["Metadata"]["BuildMethod"] == "makefile"
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    scratch, artifacts = tmp_path / "scratch", tmp_path / "artifacts"
    scratch.mkdir()
    # What SAM does: run the Makefile's target from a scratch copy, ARTIFACTS_DIR set.
    subprocess.run(["make", "--makefile", str(ROOT / "function/Makefile"), f"build-{function}",
                    f"ARTIFACTS_DIR={artifacts}", f"PYTHON={sys.executable}",
                    f"IDEM_DEMO={int(demo)}", "VENDOR_STRIPE=0"],  # offline: Stripe's SDK not fetched
                   cwd=scratch, check=True, capture_output=True)
    staged = sorted(p.relative_to(artifacts) for p in artifacts.rglob("*.py"))
    assert staged == package.core_files(demo=demo)


def test_the_production_artifact_vendors_stripes_sdk():
    """The handler to copy imports `stripe` when it charges: function/Makefile pip-installs the
    SDK pinned as pyproject.toml pins it, for Lambda's platform, into the charge function only."""
    makefile = (ROOT / "function/Makefile").read_text()
    pinned = re.search(r'"(stripe[^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert f"STRIPE_REQUIREMENT := {pinned}" in makefile
    assert "--platform manylinux2014_aarch64" in makefile and "--python-version 3.13" in makefile
    assert '-c "$(ROOT)/requirements/constraints.txt"' in makefile  # the SDK version the suite ran, as the artifact
    fn = tp.load()["Resources"][tp.FUNCTION]["Properties"]
    assert (fn["Runtime"], fn["Architectures"]) == ("python3.13", ["arm64"])


def _make_dry_run(function: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-n", "--makefile", str(ROOT / "function/Makefile"), f"build-{function}",
                           f"ARTIFACTS_DIR={tmp_path}", "PYTHON=python3", "IDEM_DEMO=0", "VENDOR_STRIPE=1"],
                          cwd=tmp_path, capture_output=True, text=True)


#: The functions whose code imports Stripe's SDK: keyed's adapter (keyed_stripe.py) charges with it,
#: the webhook (webhook.py) verifies signatures with it; the reconciliation calls Stripe over HTTPS.
NEEDS_STRIPE = {"ChargeFunction", "WebhookFunction"}


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_function_sam_builds_with_make_has_a_rule_and_stripe_where_it_imports_it(tmp_path):
    """`sam build` runs `make build-<LogicalId>` for each function whose BuildMethod is makefile:
    a function added to the template without its rule fails the build (as WebhookFunction once
    did). The functions that import Stripe's SDK get it in their artifact, and only those."""
    built = {name for name, r in tp.load()["Resources"].items()
             if r["Type"] == "AWS::Serverless::Function" and r.get("Metadata", {}).get("BuildMethod") == "makefile"}
    assert {"ChargeFunction", "ReconcileFunction", "WebhookFunction"} <= built
    for name in built:
        done = _make_dry_run(name, tmp_path)
        assert done.returncode == 0, (name, done.stderr)
        assert ("pip install" in done.stdout and "stripe" in done.stdout) is (name in NEEDS_STRIPE), (name, done.stdout)
