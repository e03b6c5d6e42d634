"""template.yaml's production profile (the default), read as CloudFormation would create it:
the books retained, no demo in it, the bucket and function hardened, the alarms, the
schedule, least privilege; cfn-lint with the serverless rules clean on both profiles; the
workflows valid against GitHub's schema; `sam validate --lint` and `sam build` when the
SAM CLI is installed in .venv-sam."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from idem.core.handlers import keyed_events
from idem.deploy import template as tp

ROOT = Path(__file__).resolve().parent.parent
DEMO_PARAMETERS = ("HandlerMode", "FailurePoint", "FailTimes")
#: The calls the keyed handler with its Stripe adapter makes (tests/test_handler_iam.py records
#: them across its scenarios): the ledger by key only, the upload read by versionId (the order
#: file's amount), the Stripe key.
PROD_HANDLER_CALLS = {
    ("dynamodb:PutItem", "LedgerTable"), ("dynamodb:UpdateItem", "LedgerTable"),
    ("dynamodb:GetItem", "LedgerTable"),  # who pays: the account's customer mapping
    ("s3:GetObject", "UploadBucket/*"), ("s3:GetObjectVersion", "UploadBucket/*"),
    ("ssm:GetParameter", "parameter:StripeSecretParameter")}
SERVICE_CALLS = {("sqs:SendMessage", "FailureQueue"), ("logs:CreateLogStream", "ChargeFunctionLogs"),
                 # the event source mapping polls UploadQueue with the function's role
                 ("sqs:ReceiveMessage", "UploadQueue"), ("sqs:DeleteMessage", "UploadQueue"),
                 ("sqs:GetQueueAttributes", "UploadQueue"),
                 ("logs:PutLogEvents", "ChargeFunctionLogs"), ("xray:PutTraceSegments", "*"),
                 ("xray:PutTelemetryRecords", "*")}
#: The handler's environment in prod (the keyed handler's settings with its Stripe adapter:
#: STAGE for the key's mode, STACK_NAME for the PaymentIntents' idem_stack metadata).
PROD_ENV = {"LEDGER_TABLE", "MAX_EVENT_AGE_SECONDS", "CURRENCIES", "MIN_AMOUNT_CENTS",
            "MAX_AMOUNT_CENTS", "STRIPE_SECRET_PARAMETER", "FUNCTION_TIMEOUT_SECONDS", "STACK_NAME", "STAGE"}
#: What keyed reads only to refuse to start (docs/money_contract.md: no default price).
PROD_REFUSED = {"PRICE_CENTS", "CURRENCY"}
#: What keyed reads and prod leaves to its default: ORDER_IDENTITY (order-id, one charge per
#: order), CHARGE_EVENTS (ObjectCreated), PROVIDER_KEY_RETENTION_SECONDS (Stripe's 24 h),
#: STRIPE_API_BASE (Stripe's own API; the workbook aims it at its loopback Stripe).
PROD_DEFAULTS = {"ORDER_IDENTITY", "CHARGE_EVENTS", "PROVIDER_KEY_RETENTION_SECONDS", "STRIPE_API_BASE"}


@pytest.fixture(scope="module")
def expanded():
    return tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"))


@pytest.fixture(scope="module")
def prod(expanded):
    return tp.resolve(expanded)  # no parameters given: the defaults are the production profile


def props(cfn, logical_id):
    return cfn["Resources"][logical_id]["Properties"]


def test_the_default_profile_is_prod(expanded):
    assert tp.parameter_values(expanded)["Profile"] == "prod"
    assert tp.conditions(expanded, tp.parameter_values(expanded))["IsProd"]


def test_the_books_are_kept_recoverable_protected_and_encrypted(prod):
    ledger = prod["Resources"]["LedgerTable"]
    assert (ledger["DeletionPolicy"], ledger["UpdateReplacePolicy"]) == ("Retain", "Retain")
    p = ledger["Properties"]
    assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert p["DeletionProtectionEnabled"] is True
    assert p["SSESpecification"] == {"SSEEnabled": True}


def test_the_failure_queue_is_kept_encrypted_and_outlives_a_long_weekend(prod):
    queue = prod["Resources"]["FailureQueue"]
    assert (queue["DeletionPolicy"], queue["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    # SQS keeps a message 60 s to 14 days (1,209,600 s); a long weekend is 4 days.
    assert 4 * 86400 <= queue["Properties"]["MessageRetentionPeriod"] <= 1_209_600


def test_no_demo_parameter_fault_wrapper_or_stand_in_provider_in_prod(prod):
    text = json.dumps({k: prod[k] for k in ("Resources", "Outputs")})
    for name in DEMO_PARAMETERS + ("ProviderTable", "demo_failure", "FAILURE_POINT", "HANDLER_MODE"):
        assert name not in text, f"{name} reaches the production stack"
    assert props(prod, tp.FUNCTION)["Handler"] == "idem.core.handlers.keyed.lambda_handler"  # the one to copy
    env = props(prod, tp.FUNCTION)["Environment"]["Variables"]
    assert set(env) == PROD_ENV
    # ... which is what the handler to copy and its siblings read, but for the safe defaults
    keyed_reads = {"MAX_EVENT_AGE_SECONDS", "FUNCTION_TIMEOUT_SECONDS"}  # read in a loop of names
    for sibling in (ROOT / "idem/core/handlers").glob("keyed*.py"):
        keyed_reads |= set(re.findall(r'(?:env|os\.environ)(?:\.get\(|\[|, )"([A-Z_]+)"', sibling.read_text()))
    assert keyed_reads - PROD_DEFAULTS - PROD_REFUSED == PROD_ENV and not PROD_REFUSED & set(env)
    assert env["STAGE"] == "prod"  # the default Stage: a live key is required, a test key refused


def test_the_bucket_is_private_tls_only_versioned_and_sheds_old_versions(prod):
    for bucket, policy in (("UploadBucket", "UploadBucketPolicy"), ("ReportBucket", "ReportBucketPolicy")):
        p = props(prod, bucket)
        assert set(p["PublicAccessBlockConfiguration"].values()) == {True}
        assert len(p["PublicAccessBlockConfiguration"]) == 4
        statements = props(prod, policy)["PolicyDocument"]["Statement"]
        # the reports bucket also lets S3 deliver the upload bucket's inventory (test_reconcile_job.py)
        (deny,) = [s for s in statements if s.get("Sid") != "UploadInventory"]
        assert len(statements) == (2 if bucket == "ReportBucket" else 1)
        assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "s3:*")
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert [tp.resource_label(r) for r in deny["Resource"]] == [bucket, f"{bucket}/*"]
        assert prod["Resources"][bucket]["DeletionPolicy"] == "Retain"
    uploads = props(prod, "UploadBucket")
    assert uploads["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = uploads["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["NoncurrentVersionExpiration"]["NoncurrentDays"] >= 30


def test_only_new_uploads_notify_the_function_and_the_template_says_why(prod):
    notify = props(prod, "UploadBucket")["NotificationConfiguration"]
    assert set(notify) == {"QueueConfigurations"}  # prod: into the queue, never straight to the function
    events = sorted(c["Event"] for c in notify["QueueConfigurations"])
    assert events == ["s3:ObjectCreated:CompleteMultipartUpload", "s3:ObjectCreated:Post",
                      "s3:ObjectCreated:Put"]
    assert {tp.ref_name(c["Queue"]) for c in notify["QueueConfigurations"]} == {"UploadQueue"}
    reasons = tp.section("UploadBucket")
    assert "Not Copy:" in reasons and "- Post:" in reasons and "CompleteMultipartUpload:" in reasons


def test_the_function_is_reserved_logged_as_json_for_long_and_traced(prod, expanded):
    p = props(prod, tp.FUNCTION)
    parameters = tp.load()["Parameters"]
    assert p["ReservedConcurrentExecutions"] == parameters["ReservedConcurrency"]["Default"] > 0
    assert p["LoggingConfig"]["LogFormat"] == "JSON"
    assert tp.ref_name(p["LoggingConfig"]["LogGroup"]) == "ChargeFunctionLogs"
    retention = props(prod, "ChargeFunctionLogs")["RetentionInDays"]
    assert retention == parameters["LogRetentionDays"]["Default"] >= 365
    assert p["TracingConfig"] == {"Mode": "Active"}
    off = tp.resolve(expanded, {"TracingMode": "PassThrough"})
    assert props(off, tp.FUNCTION)["TracingConfig"] == {"Mode": "PassThrough"}
    assert "xray" not in json.dumps(props(off, "ChargeFunctionRole"))


def test_one_parameter_feeds_the_event_age_and_the_setting_the_function_checks():
    ref = {"Ref": "MaxEventAgeSeconds"}
    function = tp.load()["Resources"][tp.FUNCTION]["Properties"]
    assert function["EventInvokeConfig"]["MaximumEventAgeInSeconds"] == ref
    assert function["Environment"]["Variables"]["MAX_EVENT_AGE_SECONDS"] == ref
    shorter_params = {"MaxEventAgeSeconds": "3600"}
    shorter = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), shorter_params), shorter_params)
    assert int(props(shorter, f"{tp.FUNCTION}EventInvokeConfig")["MaximumEventAgeInSeconds"]) == 3600
    assert props(shorter, tp.FUNCTION)["Environment"]["Variables"]["MAX_EVENT_AGE_SECONDS"] == "3600"
    assert props(shorter, tp.RECONCILER)["Environment"]["Variables"]["MAX_EVENT_AGE_SECONDS"] == "3600"


def test_the_runtime_is_named_with_the_python_the_suite_runs_in_the_readme(prod):
    runtime = props(prod, tp.FUNCTION)["Runtime"]
    assert runtime == props(prod, tp.RECONCILER)["Runtime"]
    readme = (ROOT / "README.md").read_text()
    tested = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    assert f"`{runtime}`" in readme and tested in readme


#: (namespace, metric, the resource its dimension names) for each alarm the stack must have:
#: each function its own failure queue, its new arrivals (messages sent, and the visible count's
#: rise: a redriven message is not "sent") and its oldest message's age, errors, throttles and
#: destination delivery failures; the handler's outcomes a person must act on (a parked order
#: counted once, declines as a share of attempts). A metric math alarm adds each metric it reads.
ALARMS = {
    ("AWS/SQS", "NumberOfMessagesSent", "FailureQueue"),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "FailureQueue"),
    ("AWS/SQS", "ApproximateAgeOfOldestMessage", "FailureQueue"),
    ("AWS/SQS", "ApproximateAgeOfOldestMessage", "UploadQueue"),
    ("AWS/Lambda", "Errors", tp.FUNCTION), ("AWS/Lambda", "Throttles", tp.FUNCTION),
    ("AWS/Lambda", "AsyncEventsDropped", tp.FUNCTION),
    ("AWS/Lambda", "DestinationDeliveryFailures", tp.FUNCTION),
    (keyed_events.METRICS_NAMESPACE, "needs_attention", tp.FUNCTION),  # the handler's own EMF metrics
    (keyed_events.METRICS_NAMESPACE, "declined", tp.FUNCTION), (keyed_events.METRICS_NAMESPACE, "charged", tp.FUNCTION),
    (keyed_events.METRICS_NAMESPACE, "pending", tp.FUNCTION),
    ("Idem", "Differences", tp.RECONCILER), ("AWS/Lambda", "Errors", tp.RECONCILER),
    ("AWS/Lambda", "Throttles", tp.RECONCILER), ("AWS/Lambda", "DestinationDeliveryFailures", tp.RECONCILER),
    ("AWS/SQS", "NumberOfMessagesSent", "ReconcileFailureQueue"),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "ReconcileFailureQueue"),
    ("AWS/SQS", "ApproximateAgeOfOldestMessage", "ReconcileFailureQueue"),
    ("AWS/Lambda", "Errors", "WebhookFunction"), ("AWS/Lambda", "Throttles", "WebhookFunction"),
    ("Idem", "WebhookSignatureRefused", "WebhookFunction"),
}
#: The declined share of charge attempts above which DeclinedAlarm fires (a rate, not one decline),
#: and the pending share above which PendingAlarm does (the webhook settles each pending charge).
DECLINE_RATE = PENDING_RATE = 0.2
#: Alarms on an age fire past a wait, not on the first message: seconds.
AGE_THRESHOLDS = {"FailureQueue": 86400, "ReconcileFailureQueue": 86400, "UploadQueue": 900}


def test_every_alarm_is_there_fires_on_one_and_mails_the_topic(prod, expanded):
    alarms = tp.resources_of_type(prod, "AWS::CloudWatch::Alarm")
    found = set()
    for name, alarm in alarms.items():
        p = alarm["Properties"]
        read = [m["MetricStat"]["Metric"] for m in p.get("Metrics", []) if "MetricStat" in m] or [p]
        for metric in read:
            (dimension,) = metric["Dimensions"]
            found.add((metric["Namespace"], metric["MetricName"], tp.ref_name(dimension["Value"])))
        age = read[0]["MetricName"].startswith("ApproximateAge")
        threshold = (AGE_THRESHOLDS[tp.ref_name(read[0]["Dimensions"][0]["Value"])] if age
                     else DECLINE_RATE if name == "DeclinedAlarm" else PENDING_RATE if name == "PendingAlarm" else 0)
        assert (p["Threshold"], p["ComparisonOperator"]) == (threshold, "GreaterThanThreshold")
        assert [tp.ref_name(a) for a in p["AlarmActions"]] == ["AlarmTopic"]
    assert found == ALARMS
    assert "AlarmSubscription" not in prod["Resources"]  # no address given, no subscription
    mailed = tp.resolve(expanded, {"AlarmEmail": "ops@example.com"})
    assert props(mailed, "AlarmSubscription") == {"TopicArn": {"Ref": "AlarmTopic"}, "Protocol": "email",
                                                  "Endpoint": "ops@example.com"}
    # An existing topic (a pager's) instead: the stack makes none, every alarm uses it.
    topic = "arn:aws:sns:us-east-1:123456789012:pager"
    paged = tp.resolve(expanded, {"AlarmTopicArn": topic})
    assert "AlarmTopic" not in paged["Resources"]
    assert all(a["Properties"]["AlarmActions"] == [topic]
               for a in tp.resources_of_type(paged, "AWS::CloudWatch::Alarm").values())


#: What a row's "Do" must contain: a command a person types, in backticks.
COMMAND = re.compile(r"`((python -m )?idem (settle|refund|redrive)|aws (lambda|sqs|logs) |sam logs )[^`]*`")


def test_each_alarm_has_a_readme_row_naming_the_command_that_resolves_it():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### The alarms, and what to do when one fires", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        name, _means, do = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows[name.strip("`")] = do
    assert set(rows) == set(tp.resources_of_type(tp.load(), "AWS::CloudWatch::Alarm"))
    without = sorted(name for name, do in rows.items() if not COMMAND.search(do))
    assert without == [], f"rows that name no command: {without}"


def test_prod_refuses_to_deploy_with_alarms_that_reach_nobody():
    """template.yaml's Rules section, as CloudFormation evaluates it before creating anything."""
    template = tp.load()
    (refusal,) = tp.rule_failures(template)  # the defaults: prod, no AlarmEmail, no AlarmTopicArn
    assert "AlarmEmail=" in refusal and "AlarmTopicArn=" in refusal
    assert tp.rule_failures(template, {"AlarmEmail": "ops@example.com"}) == []
    assert tp.rule_failures(template, {"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:pager"}) == []
    assert tp.rule_failures(template, {"Profile": "demo"}) == []  # the demo is disposable
    expanded = tp.translate(tp.with_code(template, "b", "k"), {"AlarmEmail": "ops@example.com"})
    assert expanded["Rules"] == template["Rules"]  # the SAM transform passes it on to CloudFormation


def test_the_upload_queue_outlives_a_six_hour_outage_and_is_capped_to_stripes_rate(prod):
    """S3 -> UploadQueue -> the function: the numbers template.yaml's comments explain."""
    queue = props(prod, "UploadQueue")
    timeout = props(prod, tp.FUNCTION)["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * timeout  # AWS's guidance for an SQS event source
    assert queue["MessageRetentionPeriod"] == 1_209_600 == props(prod, "FailureQueue")["MessageRetentionPeriod"]
    redrive = queue["RedrivePolicy"]
    assert tp.ref_name(redrive["deadLetterTargetArn"]) == "FailureQueue"
    assert redrive["maxReceiveCount"] * queue["VisibilityTimeout"] > 6 * 3600  # retries outlast 6 hours
    mapping = props(prod, "ChargeFunctionUploads")
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert tp.ref_name(mapping["EventSourceArn"]) == "UploadQueue" and mapping["BatchSize"] == 10
    copies = mapping["ScalingConfig"]["MaximumConcurrency"]
    assert copies == props(prod, tp.FUNCTION)["ReservedConcurrentExecutions"]
    assert copies / 0.2 <= 25  # Stripe's 25 requests a second per endpoint, at 200 ms or more a call
    assert "ChargeFunctionUploadPermission" not in prod["Resources"]  # S3 may not invoke it directly


def test_the_handlers_metric_is_what_the_alarm_reads():
    """The handler's EMF metric (namespace Idem, dimension FunctionName) and the reconciler's
    use the names the alarms read: one constant each side."""
    from idem.core.reconcile import job as reconcile_job

    assert (reconcile_job.NAMESPACE, reconcile_job.DIMENSION) == ("Idem", "FunctionName")


def test_the_reconciliation_runs_on_a_schedule_over_its_window(prod):
    (schedule_id, schedule), = tp.resources_of_type(prod, "AWS::Scheduler::Schedule").items()
    p = schedule["Properties"]
    assert tp.ref_name(p["Target"]["Arn"]) == tp.RECONCILER
    assert p["ScheduleExpression"] == {"Fn::Sub": "rate(${ReconcileWindowMinutes} minutes)"}
    env = props(prod, tp.RECONCILER)["Environment"]["Variables"]
    assert env["WINDOW_MINUTES"] == 60 or env["WINDOW_MINUTES"] == "60"
    assert "PROVIDER_TABLE" not in env and env["STRIPE_SECRET_PARAMETER"] == "/idem/stripe/secret-key"
    assert props(prod, tp.RECONCILER)["Handler"] == "idem.core.reconcile.job.lambda_handler"
    scheduler_role = props(prod, tp.ref_name(p["Target"]["RoleArn"]))
    (statement,) = scheduler_role["Policies"][0]["PolicyDocument"]["Statement"]
    assert (statement["Action"], tp.ref_name(statement["Resource"])) == ("lambda:InvokeFunction", tp.RECONCILER)


def test_the_charge_functions_role_grants_exactly_what_the_handler_calls_in_prod(prod):
    assert tp.role_grants(prod, "ChargeFunctionRole") == PROD_HANDLER_CALLS | SERVICE_CALLS


# -- linters: cfn-lint with the serverless rules, the workflow schema, the SAM CLI -------------
def _cfn_lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from cfnlint.runner import main; main()", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("profile", ["prod", "demo"])
def test_cfn_lint_with_the_serverless_rules_is_clean(profile):
    done = _cfn_lint("-t", "template.yaml", "--parameters", f"Profile={profile}",
                     "--append-rules", "cfn_lint_serverless.rules")
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_the_serverless_rules_run_and_each_exception_says_why():
    """The rules do load (the same template without its exceptions has findings), and every
    `ignore_checks` in template.yaml has a comment giving the reason."""
    text = (ROOT / "template.yaml").read_text()
    bare = tp.load()
    for resource in bare["Resources"].values():
        resource.get("Metadata", {}).pop("cfn-lint", None)
    scratch = ROOT / ".pytest_cache" / "template-no-exceptions.json"
    scratch.parent.mkdir(exist_ok=True)
    scratch.write_text(json.dumps(bare))
    done = _cfn_lint("-t", str(scratch), "--append-rules", "cfn_lint_serverless.rules")
    assert {"ES6000", "WS1000", "WS1004", "ES7000"} <= set(re.findall(r"^([EWI][S]?\d{4})", done.stdout, re.M))
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "ignore_checks" in line:
            nearby = lines[max(0, n - 4):n + 8]
            assert "#" in line or any(near.strip().startswith("#") for near in nearby), line


def test_the_workflows_validate_against_githubs_schema():
    workflows = sorted(str(p) for p in (ROOT / ".github/workflows").glob("*.yml"))
    assert len(workflows) == 2
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", *workflows], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_deploy_workflow_assumes_a_role_through_oidc_and_prod_waits_for_a_reviewer():
    from samtranslator.yaml_helper import yaml_parse

    flow = yaml_parse((ROOT / ".github/workflows/deploy.yml").read_text())
    text = (ROOT / ".github/workflows/deploy.yml").read_text()
    assert "aws-access-key-id" not in text and "secrets." not in text  # no stored keys
    for name in ("demo", "prod-plan", "prod"):
        job = flow["jobs"][name]
        assert job["permissions"]["id-token"] == "write"
        steps = {s.get("uses", "").split("@")[0]: s for s in job["steps"]}
        assert "role-to-assume" in steps["aws-actions/configure-aws-credentials"]["with"]
    # prod-plan after the demo, prod after prod-plan; both read the tested artifact's hash from the test job
    assert flow["jobs"]["prod"]["environment"] == "prod" and flow["jobs"]["prod"]["needs"] == ["test", "prod-plan"]
    assert flow["jobs"]["prod-plan"]["needs"] == ["test", "demo"] and flow["jobs"]["prod-plan"]["environment"] != "prod"


def test_prod_executes_only_the_change_set_that_was_shown_and_only_from_main():
    from samtranslator.yaml_helper import yaml_parse

    flow = yaml_parse((ROOT / ".github/workflows/deploy.yml").read_text())
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"] == {"branches": ["main"]}
    assert all(job["if"].startswith("github.ref == 'refs/heads/main'") for job in flow["jobs"].values())
    plan = " ".join(s.get("run", "") for s in flow["jobs"]["prod-plan"]["steps"])
    assert "--config-env prod" in plan and "--no-execute-changeset" in plan and "GITHUB_STEP_SUMMARY" in plan
    assert "describe-change-set" in plan
    # the change set shown is this run's: an earlier unapproved one is deleted before it is made,
    # and only one that can still be executed is picked
    assert plan.index("delete-change-set") < plan.index("sam deploy") and "ExecutionStatus=='AVAILABLE'" in plan
    run = " ".join(s.get("run", "") for s in flow["jobs"]["prod"]["steps"])
    assert "execute-change-set" in run and "sam deploy" not in run  # executes what was approved, nothing new


def test_nothing_deploys_unless_checkov_ran_and_found_nothing():
    from samtranslator.yaml_helper import yaml_parse

    flow = yaml_parse((ROOT / ".github/workflows/deploy.yml").read_text())
    steps = flow["jobs"]["test"]["steps"]
    runs = [s.get("run", "") for s in steps]
    (suite,) = [s for s in steps if "pytest" in s.get("run", "")]
    assert "make checkov" in runs and runs.index("make checkov") < runs.index(suite["run"])
    assert suite["env"]["IDEM_REQUIRE_CHECKOV"] == "1"  # a missing checkov fails the suite
    assert "tests" in suite["run"].split() and flow["jobs"]["demo"]["needs"] == "test"


def test_every_action_is_pinned_by_a_full_commit_sha_with_its_version():
    for workflow in sorted((ROOT / ".github/workflows").glob("*.yml")):
        for line in workflow.read_text().splitlines():
            if "uses:" in line:
                assert re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}  # v\d+(\.\d+)*$", line), (workflow.name, line)


def test_samconfig_has_the_demo_as_default_and_prod():
    import tomllib

    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    assert "Profile=demo" in config["default"]["deploy"]["parameters"]["parameter_overrides"]
    assert "Profile=prod" in config["prod"]["deploy"]["parameters"]["parameter_overrides"]
    for env in ("default", "prod"):
        assert "CAPABILITY_AUTO_EXPAND" in config[env]["deploy"]["parameters"]["capabilities"]


SAM = ROOT / ".venv-sam" / "bin" / "sam"


@pytest.mark.skipif(not SAM.exists(), reason="the SAM CLI is not installed in .venv-sam (`make sam`)")
def test_sam_validate_lint_and_sam_build(tmp_path):
    # VENDOR_STRIPE=0: the suite stays offline, so Stripe's SDK is not fetched into the artifact
    # (test_the_production_artifact_vendors_stripes_sdk checks the Makefile's rule instead).
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "PYTHON": sys.executable, "VENDOR_STRIPE": "0"}
    done = subprocess.run([str(SAM), "validate", "--lint", "--region", "us-east-1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run([str(SAM), "build", "--build-dir", str(tmp_path / "build")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "build" / tp.FUNCTION / "idem" / "core" / "entry.py").exists()
    assert not (tmp_path / "build" / tp.FUNCTION / "idem" / "demo_failure.py").exists()


def test_the_readme_states_the_costs_the_code_computes():
    from idem.deploy import prices

    readme = (ROOT / "README.md").read_text()
    rest = sum(usd for _, usd in prices.at_rest())
    upload = sum(usd for _, usd in prices.per_million_uploads())
    assert f"${rest:.2f} a month at rest" in readme
    assert f"${upload:.2f} per million uploads" in readme
    words = {8: "eight", 16: "sixteen", 18: "eighteen", 19: "nineteen"}
    assert f"the {words[prices.Usage().alarms]} alarms" in readme
    assert len(tp.resources_of_type(tp.load(), "AWS::CloudWatch::Alarm")) == prices.Usage().alarms
