"""`python -m idem deploy --target aws --yes`: the same flow on a real AWS account.

Nothing here runs unless the reader asks for it: `preflight()` wants --yes, a region and
credentials before any call leaves the machine. The stack is sent with its SAM transform
(CloudFormation expands it on AWS), tagged, and deleted at the end unless --keep.
Uploads are real, so the function runs on real Lambda: this waits for the ledger.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..core.clock import SystemClock
from . import flow, gaps
from . import template as tp
from .package import build_zip
from .stack import TAG_KEY, TAG_VALUE, TAGS, DeployError, Stack, wait_until

COST_NOTE = (
    "Leaving the stack running costs next to nothing: nothing in it bills by the hour. "
    "Lambda, DynamoDB (on demand), SQS and S3 bill per request and per byte stored; this demo "
    "stores a few kilobytes (S3 about $0.023 and DynamoDB about $0.25 per GB-month, logs "
    "$0.50 per GB ingested, kept 7 days), well under one cent a month. Delete it with "
    "`python -m idem deploy --target aws --stack {stack} --delete --yes`.")


def preflight(region: str | None, yes: bool, profile: str | None = None) -> Any:
    """A boto3 session, or DeployError before anything is created or even asked of AWS."""
    if not yes:
        raise DeployError("--target aws creates real resources in your AWS account (they cost "
                          "cents at most, and are deleted at the end); add --yes to go ahead")
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        session = boto3.Session(region_name=region or None, profile_name=profile or None)
    except ProfileNotFound as missing:
        raise DeployError(f"{missing}; list yours with `aws configure list-profiles`") from None
    if not session.region_name:
        raise DeployError("no AWS region: pass --region (for example --region eu-west-1) or set "
                          "AWS_REGION; nothing was created")
    if session.get_credentials() is None:
        raise DeployError("no AWS credentials found (environment, ~/.aws/credentials, SSO or "
                          "instance role); run `aws configure` or set AWS_PROFILE, then retry; "
                          "nothing was created")
    return session


class AwsDeployment:
    """The deploy on AWS: the code bucket, the stack, uploads, the ledger, teardown."""

    def __init__(self, session: Any, stack_name: str, say: Callable[[str], None] = print,
                 wait_seconds: float = 300, poll_seconds: float = 10) -> None:
        self.session = session
        self.say = say
        self.region = session.region_name
        self.clients = {name: session.client(name) for name in
                        ("cloudformation", "s3", "dynamodb", "lambda", "sqs", "sts")}
        self.stack = Stack(self.clients["cloudformation"], stack_name, poll_seconds=poll_seconds)
        self.wait_seconds, self.poll_seconds = wait_seconds, poll_seconds
        self.account = ""
        self.code_bucket = ""
        self.created: list[str] = []  # what this run made, so a failure can undo exactly that
        self.outputs: dict[str, str] = {}
        self.clock = SystemClock()
        self.runs: list[flow.RunReport] = []

    def connect(self, *, for_delete: bool = False) -> str:
        from botocore.exceptions import ClientError, NoCredentialsError

        try:
            identity = self.clients["sts"].get_caller_identity()
        except (ClientError, NoCredentialsError) as error:
            raise DeployError(f"AWS did not accept the credentials: {error}") from None
        self.account = identity["Account"]
        self.code_bucket = f"{self.stack.name}-code-{self.account}"
        # A name taken or a stack in a failed state stops the run before anything is made.
        action = "delete" if for_delete else self.stack.preflight()
        self.say(f"account   {self.account} in {self.region}, as {identity['Arn']}; "
                 f"stack {self.stack.name} will be {action}d")
        return action

    def package(self) -> str:
        """Zip the core and put it in a tagged code bucket (created if needed)."""
        s3 = self.clients["s3"]
        self._ensure_code_bucket()
        with tempfile.TemporaryDirectory() as scratch:
            data = build_zip(Path(scratch) / "idem-core.zip").read_bytes()
        key = f"idem-core-{hashlib.sha256(data).hexdigest()[:16]}.zip"  # new code, new key
        s3.put_object(Bucket=self.code_bucket, Key=key, Body=data)
        self.say(f"package   s3://{self.code_bucket}/{key} ({len(data):,} bytes, idem's core only)")
        return key

    def _code_bucket_owner(self) -> str:
        """'ours', 'absent', or 'theirs' (exists without our tag, or not readable)."""
        from botocore.exceptions import ClientError

        try:
            tags = self.clients["s3"].get_bucket_tagging(Bucket=self.code_bucket)["TagSet"]
        except ClientError as error:
            return "absent" if error.response["Error"]["Code"] in ("NoSuchBucket", "404") else "theirs"
        return "ours" if {"Key": TAG_KEY, "Value": TAG_VALUE} in tags else "theirs"

    def _ensure_code_bucket(self) -> None:
        s3 = self.clients["s3"]
        owner = self._code_bucket_owner()
        if owner == "theirs":
            raise DeployError(f"bucket {self.code_bucket} exists and was not made by this tool; "
                              "choose another --stack name")
        if owner == "ours":
            return
        where = {} if self.region == "us-east-1" else {
            "CreateBucketConfiguration": {"LocationConstraint": self.region}}
        s3.create_bucket(Bucket=self.code_bucket, **where)
        self.created.append("code bucket")
        s3.put_public_access_block(Bucket=self.code_bucket, PublicAccessBlockConfiguration={
            k: True for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                              "RestrictPublicBuckets")})
        s3.put_bucket_tagging(Bucket=self.code_bucket, Tagging={"TagSet": TAGS})

    def deploy(self, mode: str, code_key: str) -> str:
        parameters = flow.parameters(mode)
        existed = self.stack.describe() is not None
        status = self.stack.deploy(tp.with_code(tp.load(), self.code_bucket, code_key), parameters)
        if not existed:
            self.created.append("stack")
        self.outputs = self.stack.outputs()
        self.say(f"stack     {self.stack.name}: {status} (HandlerMode={mode})")
        return status

    def verify(self) -> list[gaps.Gap]:
        """On AWS nothing should be missing: the same check moto needs, as a read-only test."""
        processed = self.clients["cloudformation"].get_template(
            StackName=self.stack.name, TemplateStage="Processed")["TemplateBody"]
        if isinstance(processed, str):
            processed = json.loads(processed)
        found = gaps.check(processed, self.stack.physical_ids(), self.clients)
        missing = [g for g in found if g.missing]
        self.say(f"settings  {len(found) - len(missing)} of {len(found)} present as the template "
                 "says" + (f"; MISSING: {', '.join(g.setting for g in missing)}" if missing else ""))
        return missing

    def upload(self, n: int) -> flow.RunReport:
        """Upload a fresh object, wait for the function (and its retry), read the ledger."""
        key = f"alice/order-{uuid.uuid4().hex[:8]}-{n}.txt"  # fresh name: see the article's note
        dynamodb, sqs, s3 = self.clients["dynamodb"], self.clients["sqs"], self.clients["s3"]
        before = flow.snapshot(dynamodb, sqs, self.outputs, key, self.clock)
        put = s3.put_object(Bucket=self.outputs["BucketName"], Key=key, Body=b"one order")
        reference = f"s3://{self.outputs['BucketName']}/{key}?versionId={put['VersionId']}"
        self.say(f"upload    {reference}; waiting up to {self.wait_seconds:.0f} s "
                 "(Lambda retries about a minute after a failure)")
        started = time.monotonic()

        def settled() -> bool:
            now = flow.snapshot(dynamodb, sqs, self.outputs, key, self.clock)
            return now.ledger_charges > before.ledger_charges or now.dlq > before.dlq

        done = wait_until(settled, timeout=self.wait_seconds, every=self.poll_seconds)
        mode = self.stack.describe()["Parameters"]
        mode = next(p["ParameterValue"] for p in mode if p["ParameterKey"] == "HandlerMode")
        report = flow.read_state(dynamodb, sqs, self.outputs, mode=mode, key=key,
                                 reference=reference, before=before, clock=self.clock)
        self.runs.append(report)
        waited = f"after {time.monotonic() - started:.0f} s" if done else "NOT settled in time"
        self.say(f"ledger    {report.line()} ({waited})")
        return report

    def teardown(self) -> None:
        """Delete what this tool made: the stack (emptied bucket first) and the code bucket."""
        from botocore.exceptions import ClientError

        found = self.stack.describe()
        if found is not None and Stack.ours(found):
            outputs = self.stack.outputs()
            if "BucketName" in outputs:
                try:
                    flow.empty_bucket(self.clients["s3"], outputs["BucketName"])
                except ClientError:
                    pass  # never created (a failed create): the stack delete handles the rest
            self.stack.delete()
        if self.code_bucket and self._code_bucket_owner() == "ours":
            flow.empty_bucket(self.clients["s3"], self.code_bucket)
            self.clients["s3"].delete_bucket(Bucket=self.code_bucket)
        self.say(f"teardown  deleted stack {self.stack.name} and bucket {self.code_bucket}")


def run(session: Any, stack_name: str, *, keep: bool, wait_seconds: float,
        say: Callable[[str], None] = print) -> list[flow.RunReport]:
    """Package, deploy naive, upload, switch to keyed, upload, then delete (unless keep)."""
    deployment = AwsDeployment(session, stack_name, say, wait_seconds=wait_seconds)
    deployment.connect()  # raises before anything exists if the name is taken or failed
    ok = False
    try:
        code_key = deployment.package()
        for n, mode in enumerate(flow.DEMO_MODES, start=1):
            deployment.deploy(mode, code_key)
            if n == 1:
                deployment.verify()
            deployment.upload(n)
        ok = True
    finally:
        if keep and ok:
            say(COST_NOTE.format(stack=stack_name))
        else:
            deployment.teardown()
    return deployment.runs


def delete(session: Any, stack_name: str, say: Callable[[str], None] = print) -> None:
    """Delete a stack this tool created earlier (--keep), and its code bucket."""
    deployment = AwsDeployment(session, stack_name, say)
    deployment.connect(for_delete=True)
    found = deployment.stack.describe()
    if found is not None and not Stack.ours(found):
        raise DeployError(f"stack {stack_name!r} was not created by this tool (no {TAG_KEY} tag); "
                          "refusing to delete it")
    deployment.teardown()
