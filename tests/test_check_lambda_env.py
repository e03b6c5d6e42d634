"""The handler runs in Lambda's environment: its folder first on sys.path, Lambda's reserved
variables set, `--env` on top; Stripe's SDK called directly goes to the loopback Stripe."""
from __future__ import annotations

import json
import sys

import pytest

from check_cli import FAST, HANDLERS, cli, target
from idem.explore import lambda_env, stripe_sdk



def test_lambdas_reserved_variables_are_set_from_the_target():
    root = str(HANDLERS)
    env = lambda_env.environment(target("aws_region_reader"), root, given={"AWS_REGION": "eu-west-1"})
    assert env["_HANDLER"] == "aws_region_reader.lambda_handler"
    assert env["LAMBDA_TASK_ROOT"] == root and env["LAMBDA_RUNTIME_DIR"] == "/var/runtime"
    assert env["AWS_EXECUTION_ENV"] == f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}"
    assert env["AWS_DEFAULT_REGION"] == "us-east-1" and env["AWS_REGION"] == "eu-west-1"  # --env on top
    assert {"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
            "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "TZ"} <= set(env)
    assert lambda_env.handler_setting("orders.app:handle") == "orders.app.handle"


@pytest.mark.parametrize("name", ["aws_region_reader", "split/app"])
def test_a_handler_reading_lambdas_variables_or_importing_its_own_package_runs_and_holds(name):
    code, out, err = cli(target(name), *FAST)
    assert code == 0, out + err
    assert "holds" in out


def test_the_split_package_is_found_from_anywhere(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # not the handler's folder: Lambda's task root is the function's own
    code, out, err = cli(target("split/app"), *FAST, "--json")
    assert code == 0, err
    assert json.loads(out)["holds"]


def test_a_handler_importing_stripe_is_found_and_aimed_at_the_loopback():
    assert stripe_sdk.uses_stripe(target("stripe_direct"))
    assert stripe_sdk.uses_stripe(target("stripe_client_no_key"))
    assert not stripe_sdk.uses_stripe(target("keyed_books"))
    assert not stripe_sdk.uses_stripe("idem.core.handlers.keyed:lambda_handler")  # its adapter's import is not its own


def test_a_stripe_client_handler_without_a_key_runs_and_its_double_charge_is_found():
    code, out, err = cli(target("stripe_client_no_key"), *FAST, "--json")
    assert code == 1, err  # not 3 ("called api.stripe.com"): the SDK went to the loopback Stripe
    report = json.loads(out)
    assert report["baseline"]["provider:charge"] == 1  # the SDK's charge landed where charges are counted
    assert report["verdicts"].get("double_charge", 0) > 0


def test_a_stripe_sdk_direct_handler_runs_and_its_charges_land():
    code, out, err = cli(target("stripe_direct"), *FAST, "--json")
    assert code in (0, 1), err  # it runs: never 3 for calling api.stripe.com
    report = json.loads(out)
    assert report["baseline"]["provider:charge"] == 1 and report["baseline"]["books:line"] == 1
    # keyed by the order, every fault schedule of one order holds, the uploader's retried PUT included
    # (a second order at the same name is the pinned xfail below)
    faults = [r for r in report["results"] if "a second order at the same name" not in r["schedule"]]
    assert any("retried PUT" in r["schedule"] for r in faults)
    assert faults and all(r["verdict"] not in ("double_charge", "silent_loss") for r in faults)


@pytest.mark.xfail(strict=True, reason="the engine attributes a charge to an upload through the provider "
                                       "factory's wrapper; Stripe SDK calls made directly are not attributed, "
                                       "so a second order at the same name reads as 2 charges for the first")
def test_a_stripe_sdk_direct_handler_holds_with_two_uploads_of_one_name_pinned_on_purpose():
    code, out, err = cli(target("stripe_direct"), *FAST)
    assert code == 0, out


def test_the_pytest_fixture_gives_lambdas_environment_too(idem_check):
    report = idem_check(target("aws_region_reader"), retries=(0,), workers=1)
    assert report.holds and report.target.env  # AWS_REGION and the rest, as the CLI gives them
    assert dict(report.target.env)["_HANDLER"] == "aws_region_reader.lambda_handler"
