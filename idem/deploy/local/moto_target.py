"""`python -m idem deploy --target moto`: the whole deploy, in-process, on moto.

The steps are the real deploy's: package the core, upload it, expand the SAM transform
(locally, with aws-sam-translator, as CloudFormation would), create the stack, then
check what moto dropped and set it, run uploads through the stack's own bucket,
function settings, tables and queue, switch the mode with a stack update, and delete it
all. Only the function's execution is local: moto never runs Lambda code, so
idem.sim.runtime.LocalLambda runs idem.core.entry with the deployed function's environment
and event-invoke config.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator
from unittest import mock

from ...core.clock import VirtualClock
from ...sim.boundary import local_entry
from ...sim.faults import FaultPlan
from ...sim.runtime import LocalLambda, on_clock
from ...sim.world import ACCOUNT, REGION, LocalWorld, ensure_moto, fake_client
from ..aws import emulated
from .. import flow
from ..aws_rules import gaps
from .. import template as tp
from ..package import build_zip, core_files
from ..stack import Stack

ARTIFACT_KEY = "idem-core.zip"


@contextlib.contextmanager
def quiet_moto() -> Iterator[None]:
    """moto logs and warns for each resource type it cannot create, and samtranslator
    logs about metrics; neither belongs in the workbook's output."""
    loggers = [logging.getLogger(name) for name in ("moto", "samtranslator")]
    levels = [logger.level for logger in loggers]
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


def hush_moto() -> None:
    """From now on, moto's CloudFormation makes what it can without a warning per resource type
    it cannot make: the gaps step names the settings that matter (chapter 13)."""
    for name in ("moto", "samtranslator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Tried to parse .* not supported by moto", category=UserWarning)


def outputs_after_change_set(stack_name: str) -> None:
    """moto's ExecuteChangeSet makes the resources but never evaluates the template's Outputs
    (moto 5.2: the stack keeps the template and outputs it had before); evaluate them as
    CloudFormation does."""
    from moto.cloudformation.models import cloudformation_backends

    for stack in cloudformation_backends[ACCOUNT][REGION].stacks.values():
        if stack.name == stack_name:
            stack._parse_template()  # the change set's template, which execute_change_set stored
            stack.output_map = stack._create_output_map()


@contextlib.contextmanager
def s3_lambda_notifications() -> Iterator[list[str]]:
    """Record the function ARNs moto's S3 notifies on put_object, instead of letting moto
    try to run them (it would need docker). The list proves the bucket is wired."""
    fired: list[str] = []

    def record(account_id: str, event_body: Any, fn_arn: str, region_name: str) -> None:
        fired.append(fn_arn)

    with mock.patch("moto.s3.notifications._invoke_awslambda", record):
        yield fired


@dataclass
class MotoDeployment:
    """One stack on moto, step by step. `say` receives each line of the report."""

    stack_name: str = flow.DEFAULT_STACK
    say: Callable[[str], None] = print
    seed: int = 0
    clock: VirtualClock = field(default_factory=VirtualClock)
    runs: list[flow.RunReport] = field(default_factory=list)
    attempts: dict[str, list[Any]] = field(default_factory=dict)  # key -> the runtime's Attempts

    def __post_init__(self) -> None:
        ensure_moto()
        from moto.moto_api._internal import mock_random

        mock_random.seed(self.seed)  # moto's generated names and ids, made repeatable
        hush_moto()
        self.clients = {name: fake_client(name) for name in
                        ("cloudformation", "s3", "dynamodb", "lambda", "sqs", "iam", "logs")}
        self.stack = Stack(self.clients["cloudformation"], self.stack_name, poll_seconds=0.01)
        self.artifacts_bucket = f"{self.stack_name}-artifacts-{ACCOUNT}-{REGION}"
        self.template = tp.load()
        self.cfn: dict[str, Any] = {}
        self.parameters: dict[str, str] = {}
        self.outputs: dict[str, str] = {}
        self.physical: dict[str, str] = {}
        self.gaps: list[gaps.Gap] = []

    # -- 1. package and upload ----------------------------------------------------------
    def package(self) -> Path:
        with tempfile.TemporaryDirectory() as scratch:
            archive = build_zip(Path(scratch) / ARTIFACT_KEY, demo=True)
            s3 = self.clients["s3"]
            s3.create_bucket(Bucket=self.artifacts_bucket)
            s3.put_object(Bucket=self.artifacts_bucket, Key=ARTIFACT_KEY, Body=archive.read_bytes())
        self.say(f"package   {ARTIFACT_KEY}: idem's core only ({_core_summary()}), "
                 f"uploaded to s3://{self.artifacts_bucket}")
        return Path(ARTIFACT_KEY)

    # -- 2. expand the transform and create (or update) the stack ---------------------
    def expand_transforms(self, parameters: dict[str, str], bucket: str = "",
                          key: str = ARTIFACT_KEY) -> str:
        """The template as moto can create it: what CloudFormation's two transforms make of
        template.yaml on AWS, run here (aws-sam-translator, then the profile's conditions
        resolved, as AWS::LanguageExtensions allows), with the code at s3://bucket/key."""
        self.parameters = dict(parameters)
        packaged = tp.with_code(self.template, bucket or self.artifacts_bucket, key)
        with quiet_moto():
            self.cfn = tp.as_moto_makes_it(packaged, self.parameters, REGION)
        return json.dumps(self.cfn)

    def attach(self) -> None:
        """Read the created stack's outputs and resources, for the steps that follow."""
        self.outputs = self.stack.outputs()
        self.physical = self.stack.physical_ids()

    def deploy(self, mode: str, fault: dict[str, str] | None = None) -> str:
        self.expand_transforms(flow.parameters(mode, fault))
        with quiet_moto():
            status = self.stack.deploy(self.cfn, self.parameters)
        self.attach()
        settings = ", ".join(f"{k}={v}" for k, v in self.parameters.items())
        self.say(f"stack     {self.stack_name}: {status} ({settings}); "
                 f"{len(self.cfn['Resources'])} resources after the SAM transform")
        return status

    # -- 3. what moto dropped ------------------------------------------------------------
    def fill_gaps(self) -> list[gaps.Gap]:
        """What moto's CloudFormation left out of the stack just made or updated: its outputs
        (after a change set) and the settings gaps.check finds missing, each set and printed."""
        outputs_after_change_set(self.stack_name)
        self.attach()
        self.gaps = gaps.check(self.cfn, self.physical, self.clients)
        filled = gaps.apply(self.gaps, self.clients)
        for gap in filled:
            self.say(f"gap       {gap.resource} {gap.setting}: {gap.wanted} "
                     f"(moto had {gap.found!r}; set with {gap.call})")
        if not filled:
            self.say(f"gaps      all {len(self.gaps)} settings moto drops are still in place")
        still = [g for g in gaps.check(self.cfn, self.physical, self.clients) if g.missing]
        if still:
            raise RuntimeError(f"could not set {', '.join(g.setting for g in still)} on moto")
        return filled

    # -- 4. an upload, the function (locally), and the ledger read back -----------------
    def function_settings(self) -> dict[str, Any]:
        """What the deployed function is: its environment and its async-invoke config."""
        return emulated.function_settings(self.clients["lambda"], self.outputs["FunctionName"])

    def world(self) -> LocalWorld:
        """The stack's own bucket, tables and queue, as a LocalWorld the runtime can use."""
        queue_url = self.outputs["FailureQueueUrl"]
        return LocalWorld.attach(bucket=self.outputs["BucketName"],
                                 ledger_table=self.outputs["LedgerTableName"],
                                 provider_table=self.outputs["ProviderTableName"],
                                 queue_url=queue_url, clock=self.clock)

    def upload(self, key: str) -> flow.RunReport:
        fn = self.function_settings()
        if fn["on_failure"] != self.outputs["FailureQueueArn"]:
            raise RuntimeError("the function's on-failure destination is not the stack's queue")
        world = self.world()
        dynamodb, sqs = self.clients["dynamodb"], self.clients["sqs"]
        before = flow.snapshot(dynamodb, sqs, self.outputs, key, self.clock)
        # on the stack's clock, so the version's LastModified is the upload's virtual time (the
        # reconciliation lists the bucket by it)
        with s3_lambda_notifications() as fired, on_clock(self.clock):
            obj = world.upload(key, body=json.dumps({"order_id": key, "amount_cents": 500}).encode())
        if fired != [_arn(fn["name"])]:
            raise RuntimeError(f"uploading {key} notified {fired or 'nothing'}, not {fn['name']}")
        # The stack's demo failure (its FailurePoint and FailTimes parameters) happens at the
        # function's boundary, as the local runtime injects every fault: the handler has none.
        runtime = LocalLambda(world, fn["env"], fault=FaultPlan.from_demo_settings(fn["env"]),
                              retries=fn["retries"],
                              timeout=fn["timeout"],
                              max_event_age=fn["max_event_age"], function_name=fn["name"],
                              entry=local_entry(fn["handler"]), seed=self.seed)
        runtime.send(world.event(obj))
        self.attempts[key] = runtime.run()
        attempts = emulated.attempt_lines(self.attempts[key])
        report = flow.read_state(dynamodb, sqs, self.outputs, mode=fn["env"]["HANDLER_MODE"],
                                 key=key, reference=obj.uri, before=before, clock=self.clock,
                                 attempts=attempts)
        self.runs.append(report)
        self.say(f"upload    s3://{obj.bucket}/{key} -> S3 notified {fn['name']}")
        for line in attempts:
            self.say(f"            {line}")
        self.say(f"ledger    {report.line()}")
        return report

    # -- 5. teardown -----------------------------------------------------------------------
    def teardown(self) -> list[str]:
        """Empty the buckets, delete the stack and the artifacts; return what is left (nothing)."""
        s3 = self.clients["s3"]
        removed, stack_there = 0, self.stack.describe() is not None
        for output in ("BucketName", "ReportBucketName"):  # uploads, and the reconciliation's reports
            bucket = self.outputs.get(output)
            if bucket and _bucket_exists(s3, bucket):
                counted = flow.empty_bucket(s3, bucket)
                removed += counted if output == "BucketName" else 0
        with quiet_moto():
            self.stack.delete()
        if _bucket_exists(s3, self.artifacts_bucket):
            flow.empty_bucket(s3, self.artifacts_bucket)
            s3.delete_bucket(Bucket=self.artifacts_bucket)
        left = self.leftovers()
        stack = (f"emptied the bucket ({removed} object versions), deleted the stack" if stack_there
                 else "the stack was already deleted")
        self.say(f"teardown  {stack}; deleted the artifacts bucket; "
                 f"left behind: {', '.join(left) or 'nothing'}")
        return left

    def leftovers(self) -> list[str]:
        """Anything of this stack's that still exists on moto."""
        c, prefix = self.clients, self.stack_name
        found = [b["Name"] for b in c["s3"].list_buckets().get("Buckets", []) if b["Name"].startswith(prefix)]
        found += [t for t in c["dynamodb"].list_tables()["TableNames"] if t.startswith(prefix)]
        found += [u.rsplit("/", 1)[-1] for u in c["sqs"].list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])]
        found += [f["FunctionName"] for f in c["lambda"].list_functions()["Functions"]
                  if f["FunctionName"].startswith(prefix)]
        found += [r["RoleName"] for r in c["iam"].list_roles()["Roles"] if r["RoleName"].startswith(prefix)]
        found += [g["logGroupName"] for g in c["logs"].describe_log_groups(
            logGroupNamePrefix=f"/aws/lambda/{prefix}")["logGroups"]]
        return found


def dry_run(stack_name: str = flow.DEFAULT_STACK, say: Callable[[str], None] = print) -> MotoDeployment:
    """The full flow: naive double-charges, the same stack switched to keyed does not."""
    deployment = MotoDeployment(stack_name, say)
    deployment.package()
    try:
        for n, mode in enumerate(flow.DEMO_MODES, start=1):
            deployment.deploy(mode)
            deployment.fill_gaps()
            deployment.upload(f"alice/order-{n}.txt")
    finally:
        deployment.teardown()
    return deployment


def _bucket_exists(s3: Any, bucket: str) -> bool:
    return any(b["Name"] == bucket for b in s3.list_buckets().get("Buckets", []))


def _arn(function_name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"


def _core_summary() -> str:
    folders = sorted({p.parent.as_posix() + "/" for p in core_files()})
    return ", ".join(folders)
