"""`python -m idem deploy --target aws --yes`: the same flow on a real AWS account.

Nothing here runs unless the reader asks for it: `preflight()` wants --yes, a region, valid
names and credentials before any call leaves the machine. The stack is sent with its SAM
transform (CloudFormation expands it on AWS), tagged, and deleted at the end unless --keep.
Uploads are real, so the function runs on real Lambda: this waits for the ledger.

Pointed at a moto server (AWS_ENDPOINT_URL), the same code runs, and idem.deploy.aws.emulated
does the three things moto leaves out; every line they affect says so. Every botocore
error becomes one line (idem.deploy.errors), and a run that fails half-way still deletes
what it made, and says what, if anything, it could not delete.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ...core.clock import SystemClock, VirtualClock
from . import connect, emulated
from .. import flow, names, prices, sam
from ..aws_rules import gaps
from .. import template as tp
from ..errors import DeployError, reported
from ..package import build_zip
from ..stack import TAG_KEY, TAG_VALUE, TAGS, Stack, wait_until

COST_NOTE = (
    "Leaving the stack running costs little: Lambda, DynamoDB (on demand), SQS and S3 bill per "
    "request and per byte stored, and this demo stores a few kilobytes (S3 about $0.023 and "
    "DynamoDB about $0.25 per GB-month, logs $0.50 per GB ingested, kept 7 days). Its hourly "
    "reconciliation costs a fraction of a cent a month. Its {alarms} CloudWatch alarms bill "
    "${alarm_usd:.2f} each a month (an account's first 10 are free): ${alarms_usd:.2f} a month at "
    "most. Delete it with `python -m idem deploy --target aws --stack {stack} --delete --yes`.")


def cost_note(stack: str) -> str:
    """What leaving the demo running costs, with the alarm count read from template.yaml."""
    template = tp.load()
    truth = tp.conditions(template, tp.parameter_values(template, {"Profile": "demo"}))
    alarms = sum(truth.get(alarm.get("Condition", ""), True)  # the demo's alarms only
                 for alarm in tp.resources_of_type(template, "AWS::CloudWatch::Alarm").values())
    usd = prices.PRICES["alarm"].usd
    return COST_NOTE.format(stack=stack, alarms=alarms, alarm_usd=usd, alarms_usd=alarms * usd)


def preflight(region: str | None, yes: bool, profile: str | None = None,
              stack: str | None = None) -> Any:
    """A boto3 session, or MustFix (exit 2) before anything is created: --yes, a region, valid
    names, credentials, then one quick call that proves the endpoint answers and accepts them."""
    session = connect.local_session(
        region, yes, profile, what="--target aws creates real resources in your AWS account (they "
        "cost cents at most, and are deleted at the end)")
    if stack is not None:
        try:
            names.check_names(stack, session.region_name)
        except DeployError as problem:
            raise connect.MustFix(str(problem)) from None
    connect.identity(session)
    return session


class AwsDeployment:
    """The deploy on AWS: the code bucket, the stack, uploads, the ledger, teardown."""

    def __init__(self, session: Any, stack_name: str, say: Callable[[str], None] = print,
                 wait_seconds: float = 300, poll_seconds: float = 10) -> None:
        self.session = session
        self.say = say
        self.region = session.region_name
        names.check_names(stack_name, self.region)
        self.clients = {name: session.client(name, config=connect.CLIENTS) for name in
                        ("cloudformation", "s3", "dynamodb", "lambda", "sqs", "sts")}
        self.stack = Stack(self.clients["cloudformation"], stack_name, poll_seconds=poll_seconds)
        self.endpoint = self.clients["cloudformation"].meta.endpoint_url
        self.emulator = emulated.is_moto(self.endpoint)
        self.wait_seconds, self.poll_seconds = wait_seconds, poll_seconds
        self.account = ""
        self.code_bucket = ""
        self.outputs: dict[str, str] = {}
        self.clock = VirtualClock() if self.emulator else SystemClock()
        self.world = emulated.EndpointWorld(session, self.clients["sqs"], "", self.clock)
        self.runs: list[flow.RunReport] = []
        self.parameters: dict[str, str] = {}

    def reported(self) -> Any:
        """Botocore errors inside become one-line DeployErrors naming the IAM action."""
        return reported(self.clients)

    def connect(self, action: str | None = None) -> str:
        """Who and where; with no action given, what the deploy will do to the stack."""
        identity = self.clients["sts"].get_caller_identity()
        self.account = identity["Account"]
        self.code_bucket = names.code_bucket(self.stack.name, self.account, self.region)
        if self.emulator:
            self.say(f"endpoint  {self.endpoint} is a moto server, not AWS: the SAM transform is "
                     "expanded here, settings moto drops are set by hand, and each upload's "
                     "function runs in this process (lines marked SIMULATED)")
        # A name taken or a stack in a failed state stops the run before anything is made.
        action = action or self.stack.preflight()
        self.say(f"account   {self.account} in {self.region}, as {identity['Arn']}; "
                 f"stack {self.stack.name}: {action}")
        if action == "recreate":
            self.say(f"stack     {self.stack.name} is in ROLLBACK_COMPLETE (an earlier create "
                     "failed and left an empty stack, which CloudFormation can only delete): "
                     "it is deleted, then created afresh")
        return action

    def package(self) -> str:
        """Zip the core and put it in a tagged code bucket (created if needed)."""
        s3 = self.clients["s3"]
        self._ensure_code_bucket()
        with tempfile.TemporaryDirectory() as scratch:
            data = build_zip(Path(scratch) / "idem-core.zip", demo=True).read_bytes()
        key = f"idem-core-{hashlib.sha256(data).hexdigest()[:16]}.zip"  # new code, new key
        s3.put_object(Bucket=self.code_bucket, Key=key, Body=data)
        self.say(f"package   s3://{self.code_bucket}/{key} ({len(data):,} bytes, idem's core only)")
        return key

    def code_bucket_owner(self) -> str:
        """'ours', 'absent', or 'theirs' (exists without our tag, or not readable)."""
        from botocore.exceptions import ClientError

        try:
            tags = self.clients["s3"].get_bucket_tagging(Bucket=self.code_bucket)["TagSet"]
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code in ("NoSuchBucket", "404"):
                return "absent"
            if code in ("NoSuchTagSet", "AccessDenied", "403"):  # untagged, or another account's
                return "theirs"
            raise  # expired credentials, throttling...: explained, not mistaken for an owner
        return "ours" if {"Key": TAG_KEY, "Value": TAG_VALUE} in tags else "theirs"

    def _ensure_code_bucket(self) -> None:
        s3 = self.clients["s3"]
        owner = self.code_bucket_owner()
        if owner == "theirs":
            raise DeployError(f"bucket {self.code_bucket} exists and was not made by this tool "
                              "(or you may not read its tags); choose another --stack name")
        if owner == "ours":
            return
        where = {} if self.region == "us-east-1" else {
            "CreateBucketConfiguration": {"LocationConstraint": self.region}}
        s3.create_bucket(Bucket=self.code_bucket, **where)
        s3.put_public_access_block(Bucket=self.code_bucket, PublicAccessBlockConfiguration={
            k: True for k in ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                              "RestrictPublicBuckets")})
        s3.put_bucket_tagging(Bucket=self.code_bucket, Tagging={"TagSet": TAGS})

    def deploy(self, mode: str, code_key: str) -> str:
        parameters = flow.parameters(mode)
        template = tp.with_code(tp.load(), self.code_bucket, code_key)
        if self.emulator:  # moto's CloudFormation knows neither the transforms nor a Lambda alias
            template = tp.as_moto_makes_it(template, parameters, self.region)
        self.parameters = parameters
        status = self.stack.deploy(template, parameters)
        self.outputs = self.stack.outputs()
        self.say(f"stack     {self.stack.name}: {status} (HandlerMode={mode})")
        return status

    def verify(self) -> list[gaps.Gap]:
        """Every setting the template asks for, read back. On AWS nothing should be missing;
        on moto what it dropped is set with the boto3 call a person would make."""
        found = self._gaps()
        missing = [g for g in found if g.missing]
        if self.emulator and missing:
            gaps.apply(missing, self.clients)
            if any(g.missing for g in self._gaps()):
                raise DeployError("could not set the settings moto dropped; see idem.deploy.aws_rules.gaps")
            self.say(f"settings  SIMULATED: moto dropped {', '.join(dict.fromkeys(g.setting for g in missing))}; "
                     "set by hand as the template says (AWS keeps them)")
            return []
        self.say(f"settings  {len(found) - len(missing)} of {len(found)} present as the template "
                 "says" + (f"; MISSING: {', '.join(g.setting for g in missing)}" if missing else ""))
        return missing

    def _gaps(self) -> list[gaps.Gap]:
        processed = self.clients["cloudformation"].get_template(
            StackName=self.stack.name, TemplateStage="Processed")["TemplateBody"]
        if isinstance(processed, str):
            processed = json.loads(processed)
        # The processed template keeps its conditions: resolve them with the stack's parameters.
        return gaps.check(tp.resolve(processed, self.parameters), self.stack.physical_ids(), self.clients)

    def _onboard(self, account: str) -> None:
        """Link the demo account to the stand-in customer of its name, once, as onboarding would
        (`idem customers link`; the charge function parks an account with no customer)."""
        from ...core import customers

        table = self.outputs["LedgerTableName"]
        if customers.show(self.clients["dynamodb"], table, account) is None:
            self.clients["dynamodb"].update_item(
                TableName=table, Key={"pk": {"S": customers.mapping_key(account)}},
                UpdateExpression="SET #k = :kind, #a = :account, #c = :customer, linked_by = :by, #r = :reason",
                ExpressionAttributeNames={"#k": "kind", "#a": "account", "#c": "customer", "#r": "reason"},
                ExpressionAttributeValues={":kind": {"S": "customer"}, ":account": {"S": account},
                                           ":customer": {"S": account},
                                           ":by": {"S": customers.caller_arn(self.clients["sts"])},
                                           ":reason": {"S": "the demo's account"}})

    def upload(self, n: int) -> flow.RunReport:
        """Upload a fresh object, wait for the function (and its retry), read the ledger."""
        key = f"alice/order-{uuid.uuid4().hex[:8]}-{n}.txt"  # fresh name: see the article's note
        dynamodb, sqs, s3 = self.clients["dynamodb"], self.clients["sqs"], self.clients["s3"]
        before = flow.snapshot(dynamodb, sqs, self.outputs, key, self.clock)
        body = json.dumps({"order_id": key, "amount_cents": 500}).encode()  # an order file (ORDER_IDENTITY order-id)
        self._onboard("alice")
        put = s3.put_object(Bucket=self.outputs["BucketName"], Key=key, Body=body)
        reference = f"s3://{self.outputs['BucketName']}/{key}?versionId={put['VersionId']}"
        started = time.monotonic()
        if self.emulator:
            self.say(f"upload    {reference}")
            self._simulate_function(key, len(body), put, n)
        else:
            self.say(f"upload    {reference}; waiting up to {self.wait_seconds:.0f} s "
                     "(Lambda retries about a minute after a failure)")

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
        self.say(f"ledger    {report.line()} ({'on the virtual clock' if self.emulator else waited})")
        return report

    def _simulate_function(self, key: str, size: int, put: dict[str, Any], n: int) -> None:
        """What S3 and Lambda do after an upload, which moto does not: see emulated."""
        self.world.queue_url = self.outputs["FailureQueueUrl"]
        obj = emulated.s3_object(self.outputs["BucketName"], key, size, put, self.clock, n,
                                 self.region)
        attempts = emulated.run_function(self.session, self.clients, self.outputs, obj, self.world)
        self.say(f"function  {emulated.SIMULATED}")
        for line in emulated.attempt_lines(attempts):
            self.say(f"            {line}")

    # -- teardown --------------------------------------------------------------------------
    def teardown(self, *, recognized: bool = False) -> list[str]:
        """Delete what this tool made (or a stack the caller recognized as template.yaml's):
        the stack, its versioned bucket emptied first, and the code bucket. An AWS error
        does not stop it; it returns what it could not delete, each with the reason."""
        left: list[str] = []
        done: list[str] = []
        found = self._attempt(f"stack {self.stack.name}", self.stack.describe, left)
        if found is not None and (recognized or Stack.ours(found)):
            bucket = self._attempt("the stack's resources",
                                   lambda: self.stack.made("UploadBucket"), left)
            if bucket and self._attempt(f"bucket {bucket}", lambda: self._empty(bucket), left):
                done.append(f"emptied {bucket}")
            # The reconciliation writes a report every hour; its bucket must be empty to go too.
            reports = self._attempt("the stack's resources",
                                    lambda: self.stack.made("ReportBucket"), left)
            if reports:
                self._attempt(f"bucket {reports}", lambda: self._empty(reports), left)
            if self._attempt(f"stack {self.stack.name}",
                             lambda: self._delete_stack(recognized), left):
                done.append(f"deleted stack {self.stack.name}")
        if self.code_bucket and self._attempt(
                f"bucket {self.code_bucket}", self.code_bucket_owner, left) == "ours":
            if self._attempt(f"bucket {self.code_bucket}", self._delete_code_bucket, left):
                done.append(f"deleted bucket {self.code_bucket}")
        self.say(f"teardown  {', '.join(done) or 'nothing of this tool was there'}; "
                 f"left behind: {', '.join(left) or 'nothing'}")
        return left

    def _attempt(self, what: str, step: Callable[[], Any], left: list[str]) -> Any:
        try:
            with self.reported():
                return step()
        except DeployError as problem:
            left.append(f"{what} ({problem})")
            return None

    def _empty(self, bucket: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            flow.empty_bucket(self.clients["s3"], bucket)
        except ClientError as error:
            if error.response["Error"]["Code"] != "NoSuchBucket":
                raise
            return False  # never created (a failed create): nothing to empty
        return True

    def _delete_stack(self, recognized: bool) -> bool:
        self.stack.delete(recognized=recognized)
        return True

    def _delete_code_bucket(self) -> bool:
        flow.empty_bucket(self.clients["s3"], self.code_bucket)
        self.clients["s3"].delete_bucket(Bucket=self.code_bucket)
        return True

    def recognize(self, found: dict[str, Any] | None, allow_sam: bool) -> bool:
        """Whether the stack may be touched: ours by tag, or (--sam) template.yaml's by its
        mark and resources. Returns True for a SAM-made stack, False for ours."""
        if found is None or Stack.ours(found):
            return False
        if not allow_sam:
            raise DeployError(f"stack {self.stack.name!r} was not created by this tool (no "
                              f"{TAG_KEY} tag); refusing to touch it. If you made it from this "
                              "workbook's template.yaml with `sam deploy`, add --sam")
        sam.check(self.clients["cloudformation"], self.stack.name, self.region)
        profile = {p["ParameterKey"]: p.get("ParameterValue") for p in found.get("Parameters", [])}
        if profile.get("Profile") == "prod":
            raise DeployError(f"stack {self.stack.name!r} runs template.yaml's production profile: "
                              "this tool empties and deletes only demo stacks. `sam delete` deletes it "
                              "and keeps the books, the queue and the buckets, as the template says")
        return True


def run(session: Any, stack_name: str, *, keep: bool, wait_seconds: float,
        say: Callable[[str], None] = print) -> list[flow.RunReport]:
    """Package, deploy naive, upload, switch to keyed, upload, then delete (unless keep)."""
    deployment = AwsDeployment(session, stack_name, say, wait_seconds=wait_seconds)
    with deployment.reported():
        deployment.connect()  # raises before anything exists if the name is taken or failed
    failure: DeployError | None = None
    try:
        with deployment.reported():
            code_key = deployment.package()
            for n, mode in enumerate(flow.DEMO_MODES, start=1):
                deployment.deploy(mode, code_key)
                deployment.verify()
                deployment.upload(n)
    except DeployError as problem:
        failure = problem
    except BaseException:  # Ctrl-C or a bug: still delete what was made, then stop
        deployment.teardown()
        raise
    if keep and failure is None:
        say(cost_note(stack_name))
        return deployment.runs
    left = deployment.teardown()
    if failure is not None:
        raise DeployError(f"{failure}; {_after_teardown(stack_name, left)}")
    if left:
        raise DeployError(_after_teardown(stack_name, left))
    return deployment.runs


def delete(session: Any, stack_name: str, say: Callable[[str], None] = print, *,
           sam_made: bool = False) -> bool:
    """Delete a stack this tool created earlier (--keep) and its code bucket, or, with
    sam_made, a stack `sam deploy` made from template.yaml. Returns False if there was
    nothing to delete (which is not an error: see idem/cli/deploy.py)."""
    deployment = AwsDeployment(session, stack_name, say)
    with deployment.reported():
        deployment.connect("delete")
        found = deployment.stack.describe()
        code = deployment.code_bucket_owner()
        if found is None and code != "ours":
            say(f"nothing to delete: account {deployment.account} has no stack named {stack_name} "
                f"and no code bucket of this tool in {deployment.region} (deployed elsewhere? "
                "pass that --region or --profile)")
            return False
        recognized = deployment.recognize(found, sam_made)
    left = deployment.teardown(recognized=recognized)
    if left:
        raise DeployError(_after_teardown(stack_name, left))
    return True


def empty_bucket(session: Any, stack_name: str, say: Callable[[str], None] = print, *,
                 sam_made: bool = False) -> int:
    """Empty the stack's versioned upload bucket (every version and delete marker), so that
    `sam delete` can delete the stack. Returns how many versions were removed."""
    deployment = AwsDeployment(session, stack_name, say)
    with deployment.reported():
        deployment.connect("empty its bucket")
        found = deployment.stack.describe()
        if found is None:
            raise DeployError(f"account {deployment.account} has no stack named {stack_name} in "
                              f"{deployment.region}: nothing to empty (check --stack, --region)")
        deployment.recognize(found, sam_made)
        bucket = deployment.stack.made("UploadBucket")
        if bucket is None:
            raise DeployError(f"stack {stack_name} holds no upload bucket it created (state "
                              f"{found['StackStatus']}): nothing to empty")
        removed = flow.empty_bucket(deployment.clients["s3"], bucket)
    say(f"emptied   {bucket}: {removed} object versions and delete markers removed; "
        f"`sam delete --stack-name {stack_name} --region {deployment.region}` can delete the "
        "stack now (or use --delete --sam)")
    return removed


def _after_teardown(stack_name: str, left: list[str]) -> str:
    if not left:
        return "everything this run made was deleted again"
    return (f"could not delete {'; '.join(left)}: fix that, then run "
            f"`python -m idem deploy --target aws --stack {stack_name} --delete --yes`")
