"""Every botocore or AWS error the real-AWS deploy can meet becomes one line that says what
to do; stack states CloudFormation will not update are handled; names are checked first.
Errors moto cannot produce come from botocore's Stubber or botocore's own credential code.
No test here opens a connection except to a closed port on 127.0.0.1."""
from __future__ import annotations

import hashlib
import json
import socket

import boto3
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
    SSOTokenLoadError,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
)
from botocore.parsers import ResponseParserError
from botocore.stub import Stubber

from idem.cli import deploy as command
from idem.deploy import errors, flow, names
from idem.deploy import template as tp
from idem.deploy.aws.aws_target import AwsDeployment
from idem.deploy.stack import TAGS, DeployError, Stack
from test_deploy_server import loopback_only, machine_free_aws_env, one_error_line, run_cli

ARN = "arn:aws:cloudformation:us-east-1:123456789012:stack/idem-demo/5e6f"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Made-up credentials, none of the machine's AWS settings, and no connection anywhere
    but loopback (each attempt elsewhere is refused, noted, and fails the test)."""
    machine_free_aws_env(monkeypatch, tmp_path, AWS_ACCESS_KEY_ID="testing",
                         AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    escaped = loopback_only(monkeypatch)
    yield tmp_path
    assert escaped == [], "something tried to leave the machine"


def _deploy(*argv: str) -> tuple[int, str, str]:
    return run_cli("deploy", *argv)


def _client_error(code: str, message: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


# -- through the command line: botocore's real behaviour, nothing stubbed ---------------
def test_an_expired_sso_token_says_run_aws_sso_login(offline, monkeypatch):
    start_url = "https://example.awsapps.com/start"
    config = offline / "config"
    config.write_text("[profile lab]\nsso_start_url = " + start_url + "\nsso_region = us-east-1\n"
                      "sso_account_id = 123456789012\nsso_role_name = Lab\nregion = eu-west-1\n")
    cache = offline / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True)
    (cache / f"{hashlib.sha1(start_url.encode()).hexdigest()}.json").write_text(json.dumps(
        {"startUrl": start_url, "region": "us-east-1", "accessToken": "expired",
         "expiresAt": "2020-01-01T00:00:00Z"}))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    code, _, err = _deploy("--target", "aws", "--yes", "--profile", "lab")
    assert code == 2  # the user's to fix, found before anything was made
    assert one_error_line(err) == ("error: your AWS SSO session has expired or was never started: run "
                              "`aws sso login` (with --profile NAME if you use one), then run "
                              "this again; nothing was created")


def test_an_unreachable_endpoint_is_one_line_with_what_to_check(offline, monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no retries: the test stays fast
    code, _, err = _deploy("--target", "aws", "--yes", "--stack", "idem-demo")
    assert code == 2
    assert one_error_line(err) == (f'error: could not reach {closed}/: check your network connection '
                              "and proxy settings (or AWS_ENDPOINT_URL, if you set one), then run "
                              "this again")


def test_flags_that_only_make_sense_together_are_refused(offline):
    assert _deploy("--target", "aws", "--yes", "--sam")[0] == 2
    code, _, err = _deploy("--target", "aws", "--yes", "--delete", "--empty-bucket")
    assert code == 2 and "--delete already empties the bucket" in err
    code, _, err = _deploy("--target", "moto", "--empty-bucket")
    assert code == 2 and "--empty-bucket: only used with --target aws" in err


def test_names_that_make_bad_bucket_names_stop_before_any_call(offline):
    code, _, err = _deploy("--target", "aws", "--yes", "--region", "ap-southeast-2",
                           "--stack", "a-stack-name-of-twenty-eight")
    assert code == 2 and "at most 27 characters in ap-southeast-2; nothing was created" in err
    assert command.MOTO_REGION == "us-east-1" == __import__("idem.sim.world").sim.world.REGION


# -- each AWS answer, produced by botocore's Stubber -------------------------------------
@pytest.fixture
def deployment(offline):
    session = boto3.Session(region_name="us-east-1")
    made = AwsDeployment(session, "idem-demo", say=lambda line: None, poll_seconds=0.01)
    made.account, made.code_bucket = "123456789012", "idem-demo-code-123456789012-us-east-1"
    assert not made.emulator  # an AWS endpoint: no /moto-api/ question was even asked
    return made


def test_access_denied_names_the_iam_action_even_when_aws_does_not(deployment):
    with Stubber(deployment.clients["s3"]) as s3:
        s3.add_response("get_bucket_tagging", {"TagSet": TAGS})
        s3.add_client_error("put_object", "AccessDenied", "Access Denied", 403)
        with pytest.raises(DeployError) as denied, deployment.reported():
            deployment.package()
    assert str(denied.value).startswith("AWS denied s3:PutObject (AccessDenied): your identity "
                                        "needs an IAM policy that allows s3:PutObject")


def test_a_bucket_name_taken_by_another_account_says_choose_another_stack_name(deployment):
    with Stubber(deployment.clients["s3"]) as s3:
        s3.add_client_error("get_bucket_tagging", "NoSuchBucket", "gone", 404)
        s3.add_client_error("create_bucket", "BucketAlreadyExists", "The requested bucket name "
                            "is not available.", 409)
        with pytest.raises(DeployError, match="taken by another AWS account.*choose another "
                                              "--stack name"), deployment.reported():
            deployment.package()
        s3.assert_no_pending_responses()


def test_a_version_s3_will_not_delete_stops_the_teardown_with_a_reason():
    s3 = boto3.Session(aws_access_key_id="x", aws_secret_access_key="x",
                       region_name="us-east-1").client("s3")
    with Stubber(s3) as stub:
        stub.add_response("list_object_versions", {"Versions": [
            {"Key": "alice/order.txt", "VersionId": "v1"}], "IsTruncated": False})
        stub.add_response("delete_objects", {"Errors": [
            {"Key": "alice/order.txt", "VersionId": "v1", "Code": "AccessDenied"}]})
        with pytest.raises(DeployError, match="S3 kept 1 object versions in b .*AccessDenied"):
            flow.empty_bucket(s3, "b")


def _described(status: str) -> dict:
    return {"Stacks": [{"StackName": "idem-demo", "StackId": ARN, "StackStatus": status,
                        "CreationTime": "2026-01-01T00:00:00Z", "Tags": TAGS}]}


def _gone(stub: Stubber) -> None:
    stub.add_client_error("describe_stacks", "ValidationError",
                          "Stack with id idem-demo does not exist", 400)


def test_update_rollback_complete_is_updated_again(offline):
    client = boto3.client("cloudformation")
    with Stubber(client) as stub:
        stub.add_response("describe_stacks", _described("UPDATE_ROLLBACK_COMPLETE"))
        stub.add_response("update_stack", {"StackId": ARN})
        stub.add_response("describe_stacks", _described("UPDATE_COMPLETE"))  # the waiter
        stub.add_response("describe_stacks", _described("UPDATE_COMPLETE"))
        assert Stack(client, "idem-demo", poll_seconds=0.01).deploy({}, {}) == "UPDATE_COMPLETE"
        stub.assert_no_pending_responses()


def test_rollback_complete_is_deleted_then_created_afresh(offline):
    client = boto3.client("cloudformation")
    with Stubber(client) as stub:
        stub.add_response("describe_stacks", _described("ROLLBACK_COMPLETE"))
        stub.add_response("delete_stack", {}, {"StackName": "idem-demo"})
        _gone(stub)  # the delete waiter
        _gone(stub)  # nothing left over
        stub.add_response("create_stack", {"StackId": ARN})
        stub.add_response("describe_stacks", _described("CREATE_COMPLETE"))  # the waiter
        stub.add_response("describe_stacks", _described("CREATE_COMPLETE"))
        assert Stack(client, "idem-demo", poll_seconds=0.01).deploy({}, {}) == "CREATE_COMPLETE"
        stub.assert_no_pending_responses()


def test_a_create_that_rolls_back_on_aws_is_deleted_and_says_why(offline):
    client = boto3.client("cloudformation")
    with Stubber(client) as stub:
        _gone(stub)
        stub.add_response("create_stack", {"StackId": ARN})
        stub.add_response("describe_stacks", _described("ROLLBACK_COMPLETE"))  # waiter: failure
        stub.add_response("describe_stacks", _described("ROLLBACK_COMPLETE"))
        stub.add_response("describe_stack_events", {"StackEvents": [
            {"StackId": ARN, "EventId": "2", "StackName": "idem-demo", "Timestamp": "2026-01-01",
             "LogicalResourceId": "idem-demo", "ResourceStatus": "ROLLBACK_COMPLETE"},
            {"StackId": ARN, "EventId": "1", "StackName": "idem-demo", "Timestamp": "2026-01-01",
             "LogicalResourceId": "UploadBucket", "ResourceStatus": "CREATE_FAILED",
             "ResourceStatusReason": "idem-demo-uploads-123456789012-us-east-1 already exists"}]})
        stub.add_response("delete_stack", {}, {"StackName": "idem-demo"})
        _gone(stub)
        _gone(stub)
        with pytest.raises(DeployError) as failed:
            Stack(client, "idem-demo", poll_seconds=0.01).deploy({}, {})
        stub.assert_no_pending_responses()
    assert str(failed.value) == (
        "creating 'idem-demo' failed (ROLLBACK_COMPLETE): UploadBucket: idem-demo-uploads-"
        "123456789012-us-east-1 already exists. The half-made stack was deleted again")


@pytest.mark.parametrize("status, advice", [
    ("UPDATE_IN_PROGRESS", "is busy (UPDATE_IN_PROGRESS); CloudFormation does one thing at a time"),
    ("UPDATE_ROLLBACK_FAILED", "Stack actions > Continue update rollback"),
    ("DELETE_FAILED", "is in DELETE_FAILED and cannot be updated: see its events for why, delete "
                      "it with `python -m idem deploy --target aws --stack idem-demo --delete"),
])
def test_a_stack_cloudformation_cannot_update_now_is_left_alone_with_advice(offline, status, advice):
    client = boto3.client("cloudformation")
    with Stubber(client) as stub:  # one describe, nothing else
        stub.add_response("describe_stacks", _described(status))
        with pytest.raises(DeployError) as refused:
            Stack(client, "idem-demo").deploy({}, {})
        stub.assert_no_pending_responses()
    assert advice in str(refused.value) and str(refused.value).endswith("nothing was changed")


def test_a_stack_that_turned_busy_meanwhile_is_explained_from_aws_own_words(offline):
    client = boto3.client("cloudformation")
    with Stubber(client) as stub:
        stub.add_response("describe_stacks", _described("UPDATE_COMPLETE"))
        stub.add_client_error("update_stack", "ValidationError", f"Stack:{ARN} is in "
                              "UPDATE_IN_PROGRESS state and can not be updated.", 400)
        with pytest.raises(DeployError, match="^stack idem-demo is busy \\(UPDATE_IN_PROGRESS\\)"), \
                errors.reported({"cloudformation": client}):
            Stack(client, "idem-demo").deploy({}, {})


# -- explain() on its own: one line, and the thing to do ---------------------------------
@pytest.mark.parametrize("error, says", [
    (UnauthorizedSSOTokenError(), "run `aws sso login`"),
    (SSOTokenLoadError(error_msg="Token for x does not exist"), "run `aws sso login`"),
    (TokenRetrievalError(provider="sso", error_msg="Token has expired and refresh failed"),
     "run `aws sso login`"),
    (EndpointConnectionError(endpoint_url="https://sts.eu-west-1.amazonaws.com/"),
     "could not reach https://sts.eu-west-1.amazonaws.com/: check your network connection"),
    (ConnectTimeoutError(endpoint_url="https://s3.amazonaws.com/"), "could not reach https://s3"),
    (ReadTimeoutError(endpoint_url="https://s3.amazonaws.com/"), "could not reach https://s3"),
    (NoCredentialsError(), "no AWS credentials found"),
    (_client_error("ExpiredToken", "The security token included in the request is expired",
                   "GetCallerIdentity"), "rejected your credentials on GetCallerIdentity"),
    (_client_error("AccessDeniedException", "User: arn:aws:iam::1:user/a is not authorized to "
                   "perform: lambda:GetFunctionConfiguration on resource: f",
                   "GetFunctionConfiguration"), "AWS denied lambda:GetFunctionConfiguration"),
    (_client_error("ThrottlingException", "Rate exceeded", "DescribeStacks"),
     "throttled DescribeStacks (ThrottlingException)"),
    (_client_error("BucketAlreadyOwnedByYou", "yours", "CreateBucket"), "you already own a bucket"),
    (_client_error("ValidationError", "Template format error:\nline 3\n\nbad", "CreateStack"),
     "AWS refused CreateStack (ValidationError): Template format error: line 3 bad"),
    (ResponseParserError("not XML"), "could not read"),
])
def test_explain_gives_one_line_that_says_what_to_do(error, says):
    line = errors.explain(error)
    assert says in line and "\n" not in line and len(line) <= 300


def test_the_template_names_its_bucket_as_the_tool_does():
    sub = tp.load()["Resources"]["UploadBucket"]["Properties"]["BucketName"]["Fn::Sub"]
    built = (sub.replace("${AWS::StackName}", "idem-demo").replace("${AWS::AccountId}", "1" * 12)
             .replace("${AWS::Region}", "eu-west-1"))
    assert built == names.upload_bucket("idem-demo", "1" * 12, "eu-west-1")
    assert names.code_bucket("idem-demo", "1" * 12, "eu-west-1").endswith("-eu-west-1")


@pytest.mark.parametrize("bucket, problem", [
    ("ab", "3 to 63"), ("a" * 64, "3 to 63"), ("Upper-case", "only lowercase"),
    ("a..b", "two dots"), ("192.168.5.4", "IP address"), ("xn--abc", "prefix 'xn--'"),
    ("sthree-abc", "prefix 'sthree-'"), ("abc-s3alias", "suffix '-s3alias'"),
    ("abc--ol-s3", "suffix '--ol-s3'"), ("-abc", "only lowercase"),
])
def test_bucket_names_follow_s3_rules(bucket, problem):
    assert problem in names.bucket_problem(bucket)
    assert names.bucket_problem("idem-demo-uploads-123456789012-eu-west-1") is None
