"""`python -m idem deploy --target aws`, the exact real-AWS code, run end to end against moto
in server mode (ThreadedMotoServer on 127.0.0.1), reached the way boto3 reaches any endpoint:
AWS_ENDPOINT_URL. A guard fails the test if anything tries a host that is not loopback, so a
mistake here cannot reach amazonaws.com. What moto leaves out (the SAM transform, dropped
settings, running Lambda code) is done by idem.deploy.aws.emulated, and the output says so."""
from __future__ import annotations

import contextlib
import functools
import io
import ipaddress
import json
import logging
import socket
import urllib.request

import boto3
import pytest
from botocore.exceptions import ClientError

from idem import cli
from idem.deploy.aws import aws_target
from idem.deploy import template as tp
from idem.deploy.stack import TAGS

# moto warns for each resource type its CloudFormation cannot create (EventInvokeConfig)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:moto.cloudformation.parsing")
ACCOUNT = "123456789012"  # moto's account for any made-up access key


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    from moto.server import ThreadedMotoServer

    quiet = [logging.getLogger(name) for name in ("werkzeug", "moto")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    moto_server.start()
    host, port = moto_server.get_host_and_port()
    url = f"http://{host}:{port}"
    # moto would try docker for each notified function (it never runs Lambda code without
    # it): tell it not to. Its first probe of docker prints when this machine is itself a
    # container; let that happen here, not inside a test's captured output.
    config = json.dumps({"lambda": {"use_docker": False}}).encode()
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/config", data=config,
                                                  method="POST"), timeout=5).close()
    from moto import settings

    with contextlib.redirect_stdout(io.StringIO()):
        settings.moto_server_host()
    yield url
    moto_server.stop()
    for logger, level in zip(quiet, levels):
        logger.setLevel(level)


def _loopback(host: object) -> bool:
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


def machine_free_aws_env(monkeypatch, tmp_path, **settings: str) -> None:
    """None of this machine's AWS settings (profiles, config and credential files, instance
    metadata) reach botocore; then the given environment variables."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty"
    empty.write_text("")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in settings.items():
        monkeypatch.setenv(name, value)


def loopback_only(monkeypatch) -> list[str]:
    """Refuse every name lookup and connection that is not loopback, and note it in the
    returned list (botocore may turn the refusal into an error of its own: the caller
    asserts the list is empty, so an escape fails the test either way)."""
    escaped: list[str] = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(sock, address):
        host = address[0] if isinstance(address, tuple) else None
        if not _loopback(host):
            escaped.append(f"connect {address}")
            raise ConnectionRefusedError(f"test guard: {address} is not loopback")
        return real_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _loopback(host):
            escaped.append(f"resolve {host}")
            raise socket.gaierror(f"test guard: {host} is not loopback")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return escaped


@pytest.fixture
def endpoint(server, monkeypatch, tmp_path):
    """boto3 pointed at the server with made-up credentials; nothing else reachable."""
    machine_free_aws_env(monkeypatch, tmp_path, AWS_ENDPOINT_URL=server, AWS_ACCESS_KEY_ID="testing",
                         AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    escaped = loopback_only(monkeypatch)
    yield server
    assert escaped == [], "something tried to leave the machine"


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`python -m idem ARGV...`: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _deploy(*argv: str) -> tuple[int, str, str]:
    return run_cli("deploy", "--target", "aws", "--yes", *argv)


@functools.cache
def _clients(region: str = "us-east-1") -> dict:
    """The test's own view of the server (made once: sessions are slow to make)."""
    session = boto3.Session(region_name=region)
    return {name: session.client(name) for name in
            ("cloudformation", "s3", "dynamodb", "lambda", "sqs", "iam")}


def _live_stacks(c: dict) -> dict[str, str]:
    return {s["StackName"]: s["StackStatus"] for s in c["cloudformation"].list_stacks()["StackSummaries"]
            if s["StackStatus"] != "DELETE_COMPLETE"}


def _leftovers(prefix: str, region: str = "us-east-1") -> list[str]:
    """Anything named after the stack that still exists on the server, in that region."""
    c = _clients(region)
    found = [n for n in _live_stacks(c) if n.startswith(prefix)]
    found += [b["Name"] for b in c["s3"].list_buckets().get("Buckets", []) if b["Name"].startswith(prefix)]
    found += [t for t in c["dynamodb"].list_tables()["TableNames"] if t.startswith(prefix)]
    found += c["sqs"].list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
    found += [f["FunctionName"] for f in c["lambda"].list_functions()["Functions"]
              if f["FunctionName"].startswith(prefix)]
    found += [r["RoleName"] for r in c["iam"].list_roles()["Roles"] if r["RoleName"].startswith(prefix)]
    return found


def one_error_line(err: str) -> str:
    """The one line a failed command printed: no traceback, nothing else."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _fail_on(monkeypatch, event: str, error: Exception, *, when=lambda params: True) -> list:
    """Inject a failure at a boundary: the session the command makes raises `error` from
    the call named by `event` (a botocore before-parameter-build event, which sees the call's parameters) once `when(params)` holds."""
    seen: list = []
    real = aws_target.preflight

    def preflight(*args, **kwargs):
        session = real(*args, **kwargs)

        def fail(params, **_):
            if when(params):
                seen.append(params)
                raise error
        session.events.register(event, fail)
        return session

    monkeypatch.setattr(aws_target, "preflight", preflight)
    return seen


# -- the whole flow ----------------------------------------------------------------------
def test_the_aws_target_runs_end_to_end_on_moto_and_says_what_is_simulated(endpoint):
    code, out, err = _deploy("--stack", "srv-run", "--region", "us-east-1")
    assert (code, err) == (0, "")
    assert f"endpoint  {endpoint} is a moto server, not AWS" in out
    assert "stack     srv-run: CREATE_COMPLETE (HandlerMode=naive)" in out
    assert "stack     srv-run: UPDATE_COMPLETE (HandlerMode=keyed)" in out
    assert out.count("function  SIMULATED: moto runs Lambda code only in docker") == 2
    assert "settings  SIMULATED: moto dropped versioning, notification, TTL" in out
    ledger = [line for line in out.splitlines() if line.startswith("ledger")]
    assert ledger[0].startswith("ledger    naive: 2 charges for one upload")
    assert ledger[1].startswith("ledger    keyed: 1 charge for one upload (ledger 1, record done")
    assert f"s3://srv-run-code-{ACCOUNT}-us-east-1/idem-core-" in out
    assert f"s3://srv-run-uploads-{ACCOUNT}-us-east-1/alice/" in out
    assert "left behind: nothing" in out
    assert _leftovers("srv-run") == []


def test_keep_leaves_it_running_a_second_region_does_not_collide_and_delete_removes_it(endpoint):
    code, out, err = _deploy("--stack", "srv-keep", "--region", "us-east-1", "--keep")
    assert (code, err) == (0, "") and "costs little" in out and "teardown" not in out
    assert "Its 15 CloudWatch alarms bill $0.10 each a month" in out and "$1.50 a month at most" in out
    c = _clients("us-east-1")
    stack = c["cloudformation"].describe_stacks(StackName="srv-keep")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE" and stack["Tags"] == TAGS
    kept = sorted(_leftovers("srv-keep"))
    buckets = [f"srv-keep-code-{ACCOUNT}-us-east-1", f"srv-keep-uploads-{ACCOUNT}-us-east-1"]
    assert set(buckets) < set(kept) and "srv-keep" in kept and "srv-keep-charge" in kept

    # The same stack name in another region: its own buckets, and us-east-1 untouched.
    code, out, err = _deploy("--stack", "srv-keep", "--region", "eu-west-1")
    assert (code, err) == (0, ""), err
    assert f"s3://srv-keep-code-{ACCOUNT}-eu-west-1/" in out and "left behind: nothing" in out
    in_eu = set(_leftovers("srv-keep", "eu-west-1"))  # buckets and roles are listed globally
    assert in_eu < set(_leftovers("srv-keep")) and not [n for n in in_eu if "eu-west-1" in n]
    assert "srv-keep" not in _live_stacks(_clients("eu-west-1"))
    assert _live_stacks(_clients("us-east-1")).get("srv-keep") == "UPDATE_COMPLETE"

    code, out, err = _deploy("--stack", "srv-keep", "--region", "us-east-1", "--delete")
    assert (code, err) == (0, "")
    assert "emptied srv-keep-uploads-" in out and "deleted stack srv-keep" in out
    assert _leftovers("srv-keep") == []

    code, out, err = _deploy("--stack", "srv-keep", "--region", "us-east-1", "--delete")
    assert (code, err) == (0, "")  # nothing left to delete is what was asked for
    assert (f"nothing to delete: account {ACCOUNT} has no stack named srv-keep and no code "
            "bucket of this tool in us-east-1") in out


# -- failing half-way still cleans up ----------------------------------------------------
def test_an_upload_failing_half_way_deletes_everything_the_run_made(endpoint, monkeypatch):
    orders: list[str] = []

    def second_order(params):
        if params["Key"].startswith("alice/"):
            orders.append(params["Key"])
            return len(orders) == 2
        return False

    failure = ClientError({"Error": {"Code": "InternalError", "Message": "We encountered an "
                                     "internal error. Please try again."}}, "PutObject")
    injected = _fail_on(monkeypatch, "before-parameter-build.s3.PutObject", failure, when=second_order)
    code, out, err = _deploy("--stack", "srv-half", "--region", "us-east-1")
    assert code == 1 and len(injected) == 1
    assert "ledger    naive: 2 charges" in out  # the first order went through: half-way
    assert one_error_line(err) == (
        "error: AWS refused s3:PutObject (InternalError): We encountered an internal error. "
        "Please try again.; everything this run made was deleted again")
    assert ("teardown  emptied srv-half-uploads-123456789012-us-east-1, deleted stack srv-half, "
            "deleted bucket srv-half-code-123456789012-us-east-1; left behind: nothing") in out
    assert _leftovers("srv-half") == []


def test_a_throttled_handler_switch_half_way_still_deletes_everything(endpoint, monkeypatch):
    throttled = ClientError({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}},
                            "UpdateStack")
    injected = _fail_on(monkeypatch, "before-parameter-build.cloudformation.UpdateStack", throttled)
    code, out, err = _deploy("--stack", "srv-slow", "--region", "us-east-1")
    assert code == 1 and len(injected) == 1
    assert "ledger    naive: 2 charges" in out and "HandlerMode=keyed" not in out
    assert one_error_line(err) == (
        "error: AWS throttled cloudformation:UpdateStack (Throttling) and botocore's retries ran "
        "out: wait a minute and run this again (AWS_RETRY_MODE=adaptive AWS_MAX_ATTEMPTS=10 retry "
        "longer); everything this run made was deleted again")
    assert "teardown  emptied srv-slow-uploads-" in out  # the naive order's version went too
    assert _leftovers("srv-slow") == []


def test_access_denied_names_the_action_in_one_line_and_nothing_is_left(endpoint, monkeypatch):
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": (
        f"User: arn:aws:iam::{ACCOUNT}:user/alice is not authorized to perform: "
        "cloudformation:CreateStack on resource: arn:aws:cloudformation:us-east-1:"
        f"{ACCOUNT}:stack/srv-deny/* because no identity-based policy allows the "
        "cloudformation:CreateStack action")}}, "CreateStack")
    _fail_on(monkeypatch, "before-parameter-build.cloudformation.CreateStack", denied)
    code, out, err = _deploy("--stack", "srv-deny", "--region", "us-east-1")
    assert code == 1
    assert one_error_line(err).startswith(
        "error: AWS denied cloudformation:CreateStack (AccessDenied): your identity needs an IAM "
        "policy that allows cloudformation:CreateStack")
    assert _leftovers("srv-deny") == []


# -- stacks made with `sam deploy` --------------------------------------------------------
def _sam_deploy(c: dict, stack: str, template: dict | None = None) -> None:
    """What `sam deploy` leaves: the template (transform expanded, as CloudFormation does
    on AWS), created without this tool's tag, its code in SAM's own artifacts bucket."""
    artifacts = f"{stack}-samcli-artifacts"
    c["s3"].create_bucket(Bucket=artifacts)
    c["s3"].put_object(Bucket=artifacts, Key="code.zip", Body=b"zip")
    demo = {"Profile": "demo", "HandlerMode": "keyed"}
    # CloudFormation expands both transforms and resolves the profile's conditions; moto's
    # knows neither, so the test does what AWS would (and names the function where the template
    # names its alias, which moto cannot make: tp.for_moto).
    body = template or tp.for_moto(tp.resolve(tp.translate(tp.with_code(tp.load(), artifacts, "code.zip"),
                                                           demo), demo))
    c["cloudformation"].create_stack(StackName=stack, TemplateBody=json.dumps(body),
                                     Parameters=[{"ParameterKey": k, "ParameterValue": v}
                                                 for k, v in demo.items()],  # samconfig's default
                                     Capabilities=["CAPABILITY_IAM"])


def _versions(c: dict, bucket: str) -> int:
    found = c["s3"].list_object_versions(Bucket=bucket)
    return len(found.get("Versions", [])) + len(found.get("DeleteMarkers", []))


def test_a_sam_made_stack_is_emptied_and_deleted_only_with_sam(endpoint):
    c = _clients()
    _sam_deploy(c, "srv-sam")
    bucket = f"srv-sam-uploads-{ACCOUNT}-us-east-1"
    c["s3"].put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"one", b"two"):
        c["s3"].put_object(Bucket=bucket, Key="alice/order.txt", Body=body)
    c["s3"].delete_object(Bucket=bucket, Key="alice/order.txt")  # leaves a delete marker
    assert _versions(c, bucket) == 3

    code, _, err = _deploy("--stack", "srv-sam", "--delete")
    assert code == 1 and "was not created by this tool" in one_error_line(err) and "add --sam" in err
    assert _live_stacks(c)["srv-sam"] == "CREATE_COMPLETE" and _versions(c, bucket) == 3

    code, out, err = _deploy("--stack", "srv-sam", "--empty-bucket", "--sam")
    assert (code, err) == (0, "")
    assert f"emptied   {bucket}: 3 object versions and delete markers removed" in out
    assert "`sam delete --stack-name srv-sam --region us-east-1` can delete" in out
    assert _versions(c, bucket) == 0 and _live_stacks(c)["srv-sam"] == "CREATE_COMPLETE"

    c["s3"].put_object(Bucket=bucket, Key="alice/late.txt", Body=b"late")
    code, out, err = _deploy("--stack", "srv-sam", "--delete", "--sam")
    assert (code, err) == (0, "")
    assert f"emptied {bucket}, deleted stack srv-sam; left behind: nothing" in out
    assert _leftovers("srv-sam") == ["srv-sam-samcli-artifacts"]  # SAM's bucket is SAM's
    c["s3"].delete_object(Bucket="srv-sam-samcli-artifacts", Key="code.zip")
    c["s3"].delete_bucket(Bucket="srv-sam-samcli-artifacts")


def test_sam_never_vouches_for_a_stack_not_made_from_this_template(endpoint):
    c = _clients()
    other = {"Resources": {"UploadBucket": {"Type": "AWS::S3::Bucket"}}}
    c["cloudformation"].create_stack(StackName="srv-other", TemplateBody=json.dumps(other))
    code, _, err = _deploy("--stack", "srv-other", "--delete", "--sam")
    assert code == 1 and "no `Metadata: idem:workbook: the-ledger-that-charged-twice` mark" in err
    assert one_error_line(err).endswith("Nothing was touched")

    # The mark, copied into a template with something else in it, is not enough either.
    marked = tp.for_moto(tp.resolve(tp.translate(tp.with_code(tp.load(), "srv-extra-samcli-artifacts", "code.zip")),
                                    {"Profile": "demo"}))
    marked["Resources"]["Extra"] = {"Type": "AWS::SQS::Queue"}
    _sam_deploy(c, "srv-extra", marked)
    code, _, err = _deploy("--stack", "srv-extra", "--delete", "--sam")
    assert code == 1 and "holds resources template.yaml does not make: Extra (AWS::SQS::Queue)" in err
    assert {"srv-other", "srv-extra"} <= set(_live_stacks(c))
    for stack in ("srv-other", "srv-extra"):
        c["cloudformation"].delete_stack(StackName=stack)
    c["s3"].delete_object(Bucket="srv-extra-samcli-artifacts", Key="code.zip")
    c["s3"].delete_bucket(Bucket="srv-extra-samcli-artifacts")


def test_sam_never_empties_or_deletes_a_production_stack(endpoint):
    c = _clients()
    artifacts = "srv-prodsam-samcli-artifacts"
    c["s3"].create_bucket(Bucket=artifacts)
    c["s3"].put_object(Bucket=artifacts, Key="code.zip", Body=b"zip")
    # The demo's resources (so that the test can delete them), under Profile=prod: the refusal
    # reads the stack's Profile parameter, as `sam deploy --config-env prod` leaves it.
    body = tp.for_moto(tp.resolve(tp.translate(tp.with_code(tp.load(), artifacts, "code.zip"), {"Profile": "demo"}),
                                  {"Profile": "demo"}))
    c["cloudformation"].create_stack(StackName="srv-prodsam", TemplateBody=json.dumps(body),
                                     Parameters=[{"ParameterKey": "Profile", "ParameterValue": "prod"}],
                                     Capabilities=["CAPABILITY_IAM"])
    for flag in ("--delete", "--empty-bucket"):
        code, _, err = _deploy("--stack", "srv-prodsam", flag, "--sam")
        assert code == 1 and "runs template.yaml's production profile" in one_error_line(err)
    assert _live_stacks(c)["srv-prodsam"] == "CREATE_COMPLETE"
    c["cloudformation"].delete_stack(StackName="srv-prodsam")
    c["s3"].delete_object(Bucket=artifacts, Key="code.zip")
    c["s3"].delete_bucket(Bucket=artifacts)
