"""`python -m idem deploy`: the full flow on moto, the stack's safety rules, and the
real-AWS target's refusals. Nothing here can reach AWS: the aws tests stop at the
credential check, with credentials removed and sockets blocked."""
from __future__ import annotations

import contextlib
import io
import json
import socket

import pytest
from botocore.stub import Stubber

from idem import cli
from idem.deploy.names import check_names, longest_stack_name
from idem.deploy.stack import TAG_KEY, TAGS, DeployError, Stack, check_name
from idem.sim.world import ensure_moto, fake_client
from test_deploy_server import machine_free_aws_env


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["deploy", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def moto_run():
    return _run("--target", "moto", "--stack", "idem-deploytest")


def test_moto_deploy_runs_end_to_end_and_exits_0(moto_run):
    code, out, err = moto_run
    assert code == 0, err
    assert "idem-deploytest: CREATE_COMPLETE (Profile=demo, HandlerMode=naive" in out
    assert "idem-deploytest: UPDATE_COMPLETE (Profile=demo, HandlerMode=keyed" in out
    assert err == ""


def test_moto_deploy_shows_naive_double_charge_then_keyed_single_charge(moto_run):
    _, out, _ = moto_run
    ledger = [line for line in out.splitlines() if line.startswith("ledger")]
    assert ledger[0].startswith("ledger    naive: 2 charges for one upload")
    assert ledger[1].startswith("ledger    keyed: 1 charge for one upload")
    assert "S3 notified idem-deploytest-charge" in out  # the stack's bucket reached its function


def test_moto_deploy_fills_what_moto_drops_from_the_template(moto_run):
    _, out, _ = moto_run
    for setting in ("versioning: Enabled", "TTL: expires_at enabled", "2 retries, 21600 s, SQS",
                    "notification: s3:ObjectCreated:CompleteMultipartUpload -> idem-deploytest-charge, "
                    "s3:ObjectCreated:Post -> idem-deploytest-charge, "
                    "s3:ObjectCreated:Put -> idem-deploytest-charge"):
        assert setting in out


def test_moto_deploy_tears_everything_down(moto_run):
    _, out, _ = moto_run
    assert "left behind: nothing" in out
    ensure_moto()
    stacks = fake_client("cloudformation").list_stacks()["StackSummaries"]
    assert all(s["StackStatus"] == "DELETE_COMPLETE" for s in stacks if s["StackName"] == "idem-deploytest")
    assert not [t for t in fake_client("dynamodb").list_tables()["TableNames"] if t.startswith("idem-deploytest")]


def test_aws_only_options_are_refused_on_moto():
    code, _, err = _run("--keep")
    assert code == 2 and "--keep: only used with --target aws" in err


def test_bad_stack_name_is_refused_before_anything_happens():
    code, _, err = _run("--stack", "My_Stack")
    assert code == 2 and "lowercase" in err


# -- the stack's rules, on moto and with a stubbed client --------------------------------
TINY = json.dumps({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}})


def test_stack_refuses_a_name_taken_by_someone_else():
    ensure_moto()
    client = fake_client("cloudformation")
    client.create_stack(StackName="someone-elses", TemplateBody=TINY)
    stack = Stack(client, "someone-elses")
    with pytest.raises(DeployError, match="already exists and was not made by this tool"):
        stack.deploy(json.loads(TINY), {})
    with pytest.raises(DeployError, match="refusing to delete it"):
        stack.delete()
    assert client.describe_stacks(StackName="someone-elses")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    client.delete_stack(StackName="someone-elses")


def test_stack_in_a_failed_state_is_reported_and_left_alone():
    client = fake_client("cloudformation")
    with Stubber(client) as stub:  # any call beyond this one fails the test
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "idem-demo", "StackStatus": "DELETE_FAILED",
            "CreationTime": "2026-01-01T00:00:00Z", "Tags": TAGS}]}, {"StackName": "idem-demo"})
        with pytest.raises(DeployError, match="is in DELETE_FAILED and cannot be updated.*"
                                              "--delete --yes.*nothing was changed"):
            Stack(client, "idem-demo").deploy({}, {"HandlerMode": "naive"})
        stub.assert_no_pending_responses()


def test_stack_names_must_fit_the_bucket_names_they_make():
    assert check_name("idem-demo") == "idem-demo"
    for bad in ("Idem", "idem_demo", "idem-", "1idem", "idem--demo", "x" * 129):
        with pytest.raises(DeployError):
            check_name(bad)
    # the region is part of both bucket names: 63 - len("-uploads-") - 12 - len(region)
    assert check_names("x" * 32, "us-east-1") and longest_stack_name("us-east-1") == 32
    with pytest.raises(DeployError, match="at most 32 characters in us-east-1"):
        check_names("x" * 33, "us-east-1")
    with pytest.raises(DeployError, match="at most 27 characters in ap-southeast-2"):
        check_names("x" * 32, "ap-southeast-2")
    assert TAG_KEY in {t["Key"] for t in TAGS}


# -- --target aws stops before any call leaves the machine ------------------------------
@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """No credentials anywhere botocore looks, no instance metadata, and no sockets."""
    machine_free_aws_env(monkeypatch, tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError(f"a test tried to open a connection: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_aws_without_yes_refuses_first(no_aws):
    code, out, err = _run("--target", "aws", "--region", "eu-west-1")
    assert code == 2 and "add --yes to go ahead" in err and out == ""


def test_aws_without_credentials_fails_fast_with_a_clear_message(no_aws):
    code, out, err = _run("--target", "aws", "--yes", "--region", "eu-west-1")
    assert code == 2 and out == ""  # exit 2: the user's to fix
    assert err.startswith("error: no AWS credentials found") and "nothing was touched" in err


def test_aws_without_a_region_says_how_to_give_one(no_aws):
    code, _, err = _run("--target", "aws", "--yes")
    assert code == 2 and "no AWS region: pass --region" in err
