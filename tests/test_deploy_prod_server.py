"""The production profile, deployed end to end on a moto server (ThreadedMotoServer on 127.0.0.1):
the stack created with its prod settings, an order file charged once and its duplicate and the
uploader's retried PUT (a new version of the same order) turned away, STAGE=prod's key check,
the scheduled reconciliation run on a planted difference, its metric and alarm checked where
moto models them, and the stack deleted with the books retained.

Two stand-ins, said where they happen:
- Stripe is out of reach: the function is the handler to copy (keyed.lambda_handler), and the
  local runtime replaces its make_provider with the workbook's stand-in provider, in a table
  the test makes (tests/test_stripe_adapter.py runs the same handler through Stripe's SDK);
  Stripe's charge list is served to the reconciler from that table in Stripe's JSON shape;
- moto runs no Lambda code without docker and extracts no EMF metrics from logs: the local
  runtime runs the function, and the test puts the reconciler's EMF numbers with PutMetricData.
"""
from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from idem.core import customers
from idem.core.reconcile import job as reconcile_job
from idem.core.clock import VirtualClock
from idem.core.handlers.keyed_stripe import check_key_mode
from idem.core.handlers.keyed_settings import ConfigError
from idem.core.provider import Provider
from idem.deploy.aws import emulated
from idem.deploy.aws_rules import gaps
from idem.deploy import template as tp
from idem.deploy.package import build_zip
from idem.deploy.errors import DeployError
from idem.deploy.stack import Stack
from idem.sim.runtime import LocalLambda
from test_deploy_server import endpoint, server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:moto.cloudformation.parsing")
STACK = "srv-prod"
PARAMETERS = {"Profile": "prod", "AlarmEmail": "ops@example.com"}
SECRET = "/idem/stripe/secret-key"
UNMODELLED = {"AWS::CloudWatch::Alarm", "AWS::S3::BucketPolicy", "AWS::Scheduler::Schedule",
              "AWS::SNS::Subscription", "AWS::Lambda::EventInvokeConfig", "AWS::SQS::QueuePolicy",
              "AWS::CloudFormation::WaitConditionHandle",
              "AWS::Lambda::Version",  # moto makes none; tp.for_moto drops the alias and CodeDeploy
              "AWS::Lambda::Permission"}  # the webhook URL's public permission (FunctionUrlAuthType): moto makes none


def _clients() -> dict[str, Any]:
    session = boto3.Session(region_name="us-east-1")
    return {name: session.client(name) for name in
            ("cloudformation", "s3", "dynamodb", "lambda", "sqs", "cloudwatch", "ssm", "sns")}


def _stripe_page(provider_table: str, dynamodb: Any):
    """Stripe's charge list, served from the stand-in's table (Stripe is out of reach here)."""
    def fetch(request: Any) -> dict[str, Any]:
        items = dynamodb.scan(TableName=provider_table)["Items"]
        data = [{"id": i["pk"]["S"].removeprefix("charge#"), "status": "succeeded",
                 "amount": int(i["amount"]["N"]), "created": int(float(i["created_at"]["N"])),
                 "customer": i["customer"]["S"], "metadata": {"account": i["customer"]["S"], "idem_stack": STACK}}
                for i in items if i.get("kind", {}).get("S") == "charge"]
        return {"data": data, "has_more": False}
    return fetch


def test_the_production_profile_end_to_end_on_a_moto_server(endpoint, tmp_path):  # noqa: F811
    c = _clients()
    code_bucket = f"{STACK}-code"
    c["s3"].create_bucket(Bucket=code_bucket)
    c["s3"].put_object(Bucket=code_bucket, Key="core.zip",
                       Body=build_zip(tmp_path / "core.zip").read_bytes())  # prod: no fault wrapper
    cfn = tp.for_moto(tp.resolve(tp.translate(tp.with_code(tp.load(), code_bucket, "core.zip"), PARAMETERS), PARAMETERS))

    # -- the stack, as CloudFormation would make it (both transforms expanded here) ----------
    stack = Stack(c["cloudformation"], STACK, poll_seconds=0.05)
    assert stack.deploy(cfn, PARAMETERS) == "CREATE_COMPLETE"
    physical = stack.physical_ids()
    outputs = stack.outputs()
    assert "ProviderTableName" not in outputs and "ProviderTable" not in physical
    for gap in gaps.apply(gaps.check(cfn, physical, c), c):  # what moto's CloudFormation drops
        assert gap.setting in ("versioning", "notification", "TTL", "retries, max age, on failure", "queue policy")

    ledger = outputs["LedgerTableName"]
    table = c["dynamodb"].describe_table(TableName=ledger)["Table"]
    assert table["DeletionProtectionEnabled"] is True
    # moto's CloudFormation passes neither SSESpecification nor PointInTimeRecoverySpecification
    # on to the table: the template's own properties are checked instead.
    ledger_props = cfn["Resources"]["LedgerTable"]["Properties"]
    assert ledger_props["SSESpecification"] == {"SSEEnabled": True}
    assert ledger_props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    queue = c["sqs"].get_queue_attributes(QueueUrl=outputs["FailureQueueUrl"], AttributeNames=["All"])["Attributes"]
    assert (queue["MessageRetentionPeriod"], queue["SqsManagedSseEnabled"]) == ("1209600", "true")
    uploads = outputs["BucketName"]
    # What moto's CloudFormation does not create: their properties are checked in the template
    # (tests/test_production_profile.py); the event-invoke configs are set by gaps above, and
    # one alarm is made below from its template properties, as a person would.
    made = {logical for logical, physical_id in physical.items() if physical_id}
    assert {cfn["Resources"][r]["Type"] for r in set(cfn["Resources"]) - made} == UNMODELLED
    fn = emulated.function_settings(c["lambda"], outputs["FunctionName"])
    assert fn["handler"] == "idem.core.handlers.keyed.lambda_handler" and "FAILURE_POINT" not in fn["env"]
    reserved = int(tp.load()["Parameters"]["ReservedConcurrency"]["Default"])
    assert c["lambda"].get_function_concurrency(FunctionName=fn["name"])["ReservedConcurrentExecutions"] == reserved
    # prod: S3 -> UploadQueue -> the function, through an event source mapping; the queue's
    # failures end in FailureQueue after maxReceiveCount receives.
    (mapping,) = c["lambda"].list_event_source_mappings(FunctionName=fn["name"])["EventSourceMappings"]
    upload_queue = c["sqs"].get_queue_attributes(QueueUrl=outputs["UploadQueueUrl"], AttributeNames=["All"])["Attributes"]
    assert mapping["EventSourceArn"] == upload_queue["QueueArn"] and mapping["BatchSize"] == 10
    redrive = json.loads(upload_queue["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == outputs["FailureQueueArn"] and int(redrive["maxReceiveCount"]) == 75
    assert int(upload_queue["VisibilityTimeout"]) >= 6 * fn["timeout"]
    notified = c["s3"].get_bucket_notification_configuration(Bucket=outputs["BucketName"])
    assert {q["QueueArn"] for q in notified["QueueConfigurations"]} == {upload_queue["QueueArn"]}
    assert "s3.amazonaws.com" in upload_queue["Policy"]

    # -- an upload charged once, its duplicate turned away ---------------------------------
    stand_in = f"{STACK}-stripe-stand-in"
    c["dynamodb"].create_table(TableName=stand_in, BillingMode="PAY_PER_REQUEST",
                               AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                               KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    clock = VirtualClock()
    world = emulated.EndpointWorld(boto3.Session(region_name="us-east-1"), c["sqs"],
                                   outputs["FailureQueueUrl"], clock, provider_table=stand_in)
    env = fn["env"]  # the production settings as deployed; make_provider is the runtime's
    order = b'{"order_id": "A-1001", "amount_cents": 500}'  # one charge per order (ORDER_IDENTITY order-id)
    # who pays for alice: the runbook's link (idem customers link), as an operator makes it
    customers.link(c["dynamodb"], outputs["LedgerTableName"], "alice", "cus_alice", reason="onboarding",
                   caller=c["sts"].get_caller_identity()["Arn"] if "sts" in c else "operator", now=clock.now())
    put = c["s3"].put_object(Bucket=uploads, Key="alice/order-1.txt", Body=order)
    obj = emulated.s3_object(uploads, "alice/order-1.txt", len(order), put, clock, 1, "us-east-1")
    runtime = LocalLambda(world, env, retries=fn["retries"], timeout=fn["timeout"],
                          max_event_age=fn["max_event_age"], function_name=fn["name"],
                          handler=":".join(fn["handler"].rsplit(".", 1)))  # a plain handler: module:function
    runtime.send(emulated.s3_event(obj))
    runtime.send(emulated.s3_event(obj))  # S3 delivers it twice
    # the uploader's PUT timed out after S3 stored it, and was retried: the same bytes, a new version
    again = c["s3"].put_object(Bucket=uploads, Key="alice/order-1.txt", Body=order)
    retried = emulated.s3_object(uploads, "alice/order-1.txt", len(order), again, clock, 2, "us-east-1")
    assert retried.version_id != obj.version_id
    runtime.send(emulated.s3_event(retried))
    attempts = runtime.run()
    provider = Provider(c["dynamodb"], stand_in, clock)
    # one charge for the order, whose reference is the object's name (no version: the provider
    # compares every parameter of a request resent with the same key)
    assert [charge.amount for charge in provider.charges()] == [500]
    assert len(provider.charges(f"s3://{uploads}/alice/order-1.txt")) == 1
    assert [a.result["processed"][0]["status"] for a in attempts] == ["charged", "duplicate", "duplicate"]
    lines = c["dynamodb"].scan(TableName=ledger, IndexName="by_account")["Items"]
    assert [line["account"]["S"] for line in lines] == ["alice"]
    # STAGE is prod: the function refuses, at cold start, a test key (and would take a live one)
    assert env["STAGE"] == "prod"
    with pytest.raises(ConfigError, match="test Stripe key where STAGE is prod"):
        check_key_mode("sk_test_x", env["STAGE"])
    check_key_mode("sk_live_x", env["STAGE"])

    # -- the reconciliation, on a planted difference ------------------------------------------
    provider.charge(customer="bob", amount=700, currency="usd", reference="s3://elsewhere/x")
    c["ssm"].put_parameter(Name=SECRET, Value="sk_test_x", Type="SecureString")
    reconciler = emulated.function_settings(c["lambda"], outputs["ReconcileFunctionName"])
    assert reconciler["handler"] == "idem.core.reconcile.job.lambda_handler"
    job_env = {**reconciler["env"], "AWS_LAMBDA_FUNCTION_NAME": reconciler["name"]}
    lag = reconcile_job.lag_of(job_env)
    # keyed's commit writes booked_day, so the migration for older ledgers has nothing to do
    assert reconcile_job.backfill_booked_day(c["dynamodb"], ledger) == 0
    # alice's customer mapping is the one linked above (cus_alice), the customer the handler charged:
    # the reconciler compares each line's account's mapping with its charge's customer
    assert customers.show(c["dynamodb"], ledger, "alice").customer == "cus_alice"
    printed: list[str] = []
    report = reconcile_job.run(job_env, boto3.Session(region_name="us-east-1"), clock.now() + lag + 3600,
                               say=printed.append, fetch=_stripe_page(stand_in, c["dynamodb"]))
    assert [(e.account, e.cents) for e in report.unbooked] == [("bob", 700)]
    assert (report.uncharged, report.ledger_lines, report.provider_charges) == ([], 1, 2)
    body = c["s3"].get_object(Bucket=outputs["ReportBucketName"], Key=report.key())["Body"].read()
    assert json.loads(body)["differences"] == 1

    # The alarm, made from its template properties (moto's CloudFormation skips alarms), must
    # find the metric the reconciler emits. moto extracts no EMF from logs either: the EMF
    # line's numbers are put as CloudWatch would put them.
    props = dict(cfn["Resources"]["ReconcileDifferencesAlarm"]["Properties"])
    dimensions = [{"Name": d["Name"], "Value": physical[tp.ref_name(d["Value"])]} for d in props["Dimensions"]]
    assert dimensions == [{"Name": "FunctionName", "Value": reconciler["name"]}]
    assert [tp.ref_name(a) for a in props["AlarmActions"]] == ["AlarmTopic"]
    c["cloudwatch"].put_metric_alarm(
        AlarmName=f"{STACK}-differences", Namespace=props["Namespace"], MetricName=props["MetricName"],
        Dimensions=dimensions, Statistic=props["Statistic"], Period=props["Period"],
        EvaluationPeriods=props["EvaluationPeriods"], Threshold=props["Threshold"],
        ComparisonOperator=props["ComparisonOperator"], AlarmActions=[outputs["AlarmTopicArn"]])
    emf = json.loads(printed[0])
    directive = emf["_aws"]["CloudWatchMetrics"][0]
    c["cloudwatch"].put_metric_data(Namespace=directive["Namespace"], MetricData=[{
        "MetricName": name["Name"], "Value": emf[name["Name"]],
        "Dimensions": [{"Name": "FunctionName", "Value": emf["FunctionName"]}]}
        for name in directive["Metrics"]])
    (alarm,) = c["cloudwatch"].describe_alarms(AlarmNames=[f"{STACK}-differences"])["MetricAlarms"]
    found = c["cloudwatch"].get_metric_statistics(
        Namespace=alarm["Namespace"], MetricName=alarm["MetricName"], Dimensions=alarm["Dimensions"],
        StartTime=0, EndTime=4_000_000_000, Period=alarm["Period"], Statistics=[alarm["Statistic"]])
    (point,) = found["Datapoints"]
    assert point[alarm["Statistic"]] == 1 > alarm["Threshold"]  # the alarm's own query breaches
    c["cloudwatch"].delete_alarms(AlarmNames=[alarm["AlarmName"]])

    # -- deleting the stack keeps the books -------------------------------------------------
    c["cloudformation"].delete_stack(StackName=STACK)
    c["cloudformation"].get_waiter("stack_delete_complete").wait(
        StackName=STACK, WaiterConfig={"Delay": 0.1, "MaxAttempts": 300})
    assert ledger in c["dynamodb"].list_tables()["TableNames"], "the ledger went with the stack"
    kept = c["dynamodb"].scan(TableName=ledger, IndexName="by_account")["Items"]
    assert len(kept) == 1
    queue_name = outputs["FailureQueueUrl"].rsplit("/", 1)[-1]
    assert queue_name in [u.rsplit("/", 1)[-1] for u in c["sqs"].list_queues().get("QueueUrls", [])]
    buckets = {b["Name"] for b in c["s3"].list_buckets()["Buckets"]}
    assert {uploads, outputs["ReportBucketName"]} <= buckets

    # -- a redeploy after the delete: refused in one line, then adopting the books ------------
    with pytest.raises(DeployError, match="AdoptRetained=yes"):  # never an empty ledger beside
        Stack(c["cloudformation"], STACK, poll_seconds=0.05).deploy(cfn, PARAMETERS)
    assert c["dynamodb"].list_tables()["TableNames"].count(ledger) == 1
    adopting = {**PARAMETERS, "AdoptRetained": "yes"}
    again = tp.for_moto(tp.resolve(tp.translate(tp.with_code(tp.load(), code_bucket, "core.zip"), adopting), adopting))
    assert not {"LedgerTable", "UploadBucket", "FailureQueue", "UploadQueue"} & set(again["Resources"])
    stack = Stack(c["cloudformation"], STACK, poll_seconds=0.05)
    assert stack.deploy(again, adopting) == "CREATE_COMPLETE"
    adopted = stack.outputs()
    assert (adopted["LedgerTableName"], adopted["BucketName"]) == (ledger, uploads)
    assert adopted["FailureQueueArn"] == outputs["FailureQueueArn"]
    assert len(c["dynamodb"].scan(TableName=ledger, IndexName="by_account")["Items"]) == 1  # the books, kept
    c["cloudformation"].delete_stack(StackName=STACK)
    c["cloudformation"].get_waiter("stack_delete_complete").wait(
        StackName=STACK, WaiterConfig={"Delay": 0.1, "MaxAttempts": 300})

    # -- the test's own cleanup: what prod keeps on purpose, removed by hand ------------------
    c["dynamodb"].update_table(TableName=ledger, DeletionProtectionEnabled=False)
    for name in (ledger, stand_in):
        c["dynamodb"].delete_table(TableName=name)
    for url in c["sqs"].list_queues(QueueNamePrefix=STACK).get("QueueUrls", []):  # every queue prod keeps
        c["sqs"].delete_queue(QueueUrl=url)
    c["ssm"].delete_parameter(Name=SECRET)
    for bucket in (uploads, outputs["ReportBucketName"], code_bucket):
        versions = c["s3"].list_object_versions(Bucket=bucket)
        for v in versions.get("Versions", []) + versions.get("DeleteMarkers", []):
            c["s3"].delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
        c["s3"].delete_bucket(Bucket=bucket)
    logs = boto3.client("logs", region_name="us-east-1")
    for group in logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{STACK}")["logGroups"]:
        logs.delete_log_group(logGroupName=group["logGroupName"])
