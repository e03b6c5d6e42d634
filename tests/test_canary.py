"""A deploy that can be undone: the charge function is published through the alias `live`, which
CodeDeploy shifts to a new version (a canary in prod) and moves back when a charge alarm fires;
staging deploys prod's profile and handler on Stripe's test mode (samconfig.toml)."""
from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import pytest

from idem.deploy import flow, throughput
from idem.deploy import template as tp

ROOT = Path(__file__).resolve().parents[1]


def _expanded(overrides: dict[str, str]) -> dict:
    return tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), overrides), overrides)


@pytest.fixture(scope="module")
def prod() -> dict:
    return _expanded({"AlarmEmail": "ops@example.com"})


def test_uploads_reach_the_live_alias_which_codedeploy_shifts_with_a_canary(prod):
    (alias_id, alias) = tp.one(prod, "AWS::Lambda::Alias")
    assert alias["Properties"]["Name"] == "live" and tp.ref_name(alias["Properties"]["FunctionName"]) == tp.FUNCTION
    mapping = prod["Resources"]["ChargeFunctionUploads"]["Properties"]
    assert tp.ref_name(mapping["FunctionName"]) == alias_id  # SQS invokes the alias, not $LATEST
    assert alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"] == {
        "Ref": "ChargeFunctionDeploymentGroup"}
    group = prod["Resources"]["ChargeFunctionDeploymentGroup"]["Properties"]
    config = group["DeploymentConfigName"]["Fn::Sub"]
    assert config[0] == "CodeDeployDefault.Lambda${ConfigName}"
    assert config[1]["ConfigName"] == "Canary10Percent5Minutes"


def test_the_canary_rolls_back_on_the_charge_alarms(prod):
    group = prod["Resources"]["ChargeFunctionDeploymentGroup"]["Properties"]
    assert group["AlarmConfiguration"]["Enabled"] is True
    watched = {tp.ref_name(a["Name"]) for a in group["AlarmConfiguration"]["Alarms"]}
    assert watched == {"ChargeErrorsAlarm", "NeedsAttentionAlarm", "DeclinedAlarm"}
    assert all(prod["Resources"][name]["Type"] == "AWS::CloudWatch::Alarm" for name in watched)
    rollback = group["AutoRollbackConfiguration"]
    assert rollback["Enabled"] is True and "DEPLOYMENT_STOP_ON_ALARM" in rollback["Events"]


def test_the_demo_takes_a_new_version_at_once():
    assert flow.parameters("keyed")["DeploymentType"] == "AllAtOnce"
    demo = _expanded(flow.parameters("keyed"))
    group = demo["Resources"]["ChargeFunctionDeploymentGroup"]["Properties"]
    assert group["DeploymentConfigName"]["Fn::Sub"][1]["ConfigName"] == "AllAtOnce"
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    assert "DeploymentType=AllAtOnce" in config["default"]["deploy"]["parameters"]["parameter_overrides"]


def test_staging_deploys_prods_profile_and_handler_on_stripes_test_mode():
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    staging = dict(p.split("=", 1) for p in shlex.split(config["staging"]["deploy"]["parameters"]["parameter_overrides"]))
    assert staging["Profile"] == "prod" and staging["Stage"] == "staging"
    assert config["staging"]["global"]["parameters"]["stack_name"] != config["prod"]["global"]["parameters"]["stack_name"]
    # a sandbox allows 25 requests a second: the copies follow (https://docs.stripe.com/rate-limits)
    assert int(staging["ReservedConcurrency"]) == throughput.copies_within_stripes_limits(
        throughput.FASTEST_UPLOAD_SECONDS, "sandbox")
    resolved = _expanded({**staging, "AlarmEmail": "ops@example.com"})
    prod = _expanded({"AlarmEmail": "ops@example.com"})
    charge, prods = (t["Resources"][tp.FUNCTION]["Properties"] for t in (resolved, prod))
    assert charge["Handler"] == prods["Handler"] == "idem.core.handlers.keyed.lambda_handler"
    assert charge["Environment"]["Variables"]["STAGE"] == "staging"  # the function refuses a live key
    assert set(resolved["Resources"]) == set(prod["Resources"])  # the same stack, resource for resource
