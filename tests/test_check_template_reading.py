"""`idem check --template` reads a function's settings and trigger wherever the template declares them
(docs/check_from_a_template.md, P18 to P22): SAM's Globals on SAM functions only and merged as SAM
merges them, conditions on pseudo parameters, mappings, a function named by its name or ARN written
out, CDK's bucket notification, and the event types a trigger delivers. Each template here deploys a
function the way teams write templates; each wrong reading was a wrong verdict (a destination
invented: a false "holds"; one missed: a false "breaks")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from check_cli import cli, target

TEMPLATES = Path(__file__).parent / "templates"
SAM = TEMPLATES / "globals_and_plain.yaml"
CFN = TEMPLATES / "named_and_regional.yaml"
CDK = TEMPLATES / "cdk_notifications.json"
RULES = TEMPLATES / "eventbridge_patterns.yaml"


def _read(template: Path, function: str, source: str | None = None, **given: str):
    from idem.explore.target.template_function import read

    return read(str(template), function, given, source=source)


def _check(monkeypatch, families: str, *args: str) -> tuple[int, dict]:
    """The CLI on the named families only, with the template's own retries, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    code, out, _ = cli(*args, "--workers", "1", "--json")
    return code, json.loads(out)


# P18: Globals reach SAM functions only, merged as SAM merges them.

def test_globals_merge_into_a_sam_function_map_by_map_its_own_values_winning():
    found = _read(SAM, "GlobalsMerged")
    deployed = found.deployed
    # its EventInvokeConfig sets only the event's age: Globals' DestinationConfig and retries stay
    assert deployed["failure_destination"] == "OnFailure Failures"
    assert (deployed["max_event_age"], deployed["max_retry_attempts"]) == (3600, 2)
    assert deployed["reserved_concurrency"] == 1 and deployed["timeout"] == 30
    assert found.env["STAGE"] == "own" and found.env["LEDGER_TABLE"] == "idem-check-Ledger"
    # lists are joined, Globals' first
    assert found.layers == ["arn:aws:lambda:us-east-1:123456789012:layer:shared:1",
                            "arn:aws:lambda:us-east-1:123456789012:layer:own:1"]


def test_a_plain_lambda_function_beside_sam_ones_gets_nothing_from_globals():
    deployed = _read(SAM, "Legacy").deployed
    # no failure destination of its own (Globals' OnFailure is not its), no reserved concurrency,
    # and CloudFormation's own Timeout, 3 s
    assert deployed["failure_destination"] == ""
    assert deployed["reserved_concurrency"] == -1
    assert deployed["timeout"] == 3
    assert "STAGE" not in _read(SAM, "Legacy").env


def test_the_sam_merge_follows_sams_rules_for_maps_lists_primitives_and_intrinsics():
    from idem.explore.target.template_function import merge_globals

    glob = {"Timeout": 30, "Layers": ["a"], "Architectures": ["x86_64"],
            "Environment": {"Variables": {"A": "1", "B": "2"}}, "Tracing": {"Ref": "Mode"}}
    own = {"Timeout": 60, "Layers": ["b"], "Architectures": ["arm64"],
           "Environment": {"Variables": {"B": "own"}}, "Tracing": {"Fn::If": ["C", "Active", "PassThrough"]}}
    assert merge_globals(glob, own) == {
        "Timeout": 60, "Layers": ["a", "b"], "Architectures": ["arm64"],
        "Environment": {"Variables": {"A": "1", "B": "own"}},
        "Tracing": {"Fn::If": ["C", "Active", "PassThrough"]}}  # an intrinsic is one value: the function's


# P19: conditions on pseudo parameters; mappings; what cannot be resolved is exit 2 in one line.

def test_a_condition_on_the_region_is_true_in_the_region_the_check_deploys_to():
    assert _read(CFN, "RegionalDlq").deployed["failure_destination"] == "DeadLetterConfig PrimaryDlq"


@pytest.mark.parametrize("stage, timeout, retries", [("prod", 40, 1), ("dev", 10, 0)])
def test_find_in_map_reads_the_mapping_with_the_parameters_value(stage, timeout, retries):
    deployed = _read(SAM, "Mapped", Stage=stage).deployed
    assert (deployed["timeout"], deployed["max_retry_attempts"]) == (timeout, retries)


def test_a_value_the_check_cannot_resolve_is_bad_input_in_one_line_with_json():
    code, out, err = cli("--template", str(SAM), "--function", "Imported", "--json")
    assert code == 2
    message = json.loads(out)["error"]
    assert message.startswith("--template globals_and_plain.yaml, function Imported: its Timeout is "
                              '{"Fn::ImportValue": "shared-timeout"}'), message
    assert "\n" not in message and "Traceback" not in err


# P20: a function named by its FunctionName written out, or its ARN.

def test_an_event_invoke_config_naming_the_function_by_its_name_or_arn_applies():
    named = _read(CFN, "NamedFunction").deployed
    assert (named["failure_destination"], named["max_retry_attempts"]) == ("OnFailure Failures", 1)
    by_arn = _read(CFN, "NamedByArn")
    assert (by_arn.deployed["failure_destination"], by_arn.deployed["max_retry_attempts"]) == ("OnFailure Failures", 0)
    # and the bucket's notification naming it by its ARN is its trigger, with its key filter
    (trigger,) = by_arn.triggers
    assert (trigger.kind, trigger.bucket, trigger.suffix) == ("s3", "NamedBucket", ".json")


# P21: CDK's bucket notification; EventBridge's pattern; the header says the trigger.

def test_cdks_bucket_notification_is_the_functions_s3_trigger_with_its_key_filter():
    found = _read(CDK, "Charge5C2A9E11", source=target("keyed_books"))
    (trigger,) = found.triggers
    assert (trigger.kind, trigger.prefix, trigger.suffix) == ("s3", "incoming/", ".json")
    assert trigger.declared == "Custom::S3BucketNotifications UploadsNotifications5B6C7D8E"
    assert found.bucket == "idem-check-uploads1e3f8a8c"
    assert found.deployed["failure_destination"] == "OnFailure ChargeFailures2D7E6B31"
    assert ("S3, Custom::S3BucketNotifications UploadsNotifications5B6C7D8E, bucket "
            "idem-check-uploads1e3f8a8c, keys beginning 'incoming/' and ending '.json', every upload"
            ) == found.deployed["trigger"]


def test_an_eventbridge_rules_pattern_gives_its_bucket_key_filter_and_upload_kinds():
    put_only = _read(RULES, "PutObjectOnly")
    (trigger,) = put_only.triggers
    assert (trigger.kind, trigger.delivered_by) == ("eventbridge", ("PutObject",))
    assert put_only.bucket == "team-orders"
    (incoming,) = _read(RULES, "UnderIncoming").triggers
    assert (incoming.prefix, incoming.delivered_by) == ("incoming/", ())


def test_a_function_with_no_trigger_in_its_template_says_the_check_used_its_own_bucket():
    from idem.explore.target.deployed import Deployed

    deployed = Deployed.of(_read(CDK, "BucketNotificationsHandler050a0587").deployed)
    assert "fed by nothing in the template: S3 from the check's own bucket, every key" in deployed.describe("s3")


# P22: the event types a trigger delivers.

def test_s3_event_types_name_the_uploads_a_trigger_delivers():
    (put_only,) = _read(SAM, "PutOnly").triggers
    assert put_only.delivered_by == ("PutObject",)
    (every,) = _read(SAM, "GlobalsMerged").triggers
    assert every.delivered_by == ()


def test_a_trigger_that_delivers_no_put_object_is_bad_input():
    from idem.explore.target.template_function import TemplateError

    with pytest.raises(TemplateError, match="S3 invokes it only for s3:ObjectCreated:CompleteMultipartUpload"):
        _read(SAM, "MultipartOnly")


def test_a_function_subscribed_to_put_object_only_loses_a_post_or_multipart_upload_silently(monkeypatch):
    """A false "holds" before: S3 never invokes a function subscribed to s3:ObjectCreated:Put for an
    upload by POST or in parts, so such an order is never charged."""
    code, report = _check(monkeypatch, "uploads", "--template", str(SAM), "--function", "PutOnly")
    assert code == 1
    assert {r["verdict"] for r in report["results"]} == {"silent_loss"}
    assert report["deployed"]["trigger"].endswith("for s3:ObjectCreated:Put only")
    code, report = _check(monkeypatch, "uploads", "--template", str(SAM), "--function", "GlobalsMerged")
    assert code == 0, report["verdicts"]


def test_an_eventbridge_rule_for_put_object_only_loses_a_multipart_upload_silently(monkeypatch):
    code, report = _check(monkeypatch, "uploads", "--template", str(RULES), "--function", "PutObjectOnly")
    assert code == 1
    assert {r["verdict"] for r in report["results"]} == {"silent_loss"}


def test_behind_cdks_prefix_filter_the_first_folder_is_no_account(monkeypatch):
    """A false "holds" before: behind a notification for incoming/ only, keyed_books (the account is
    the key's first folder) finds the account "incoming" for every upload, so another account's order
    with the same id is answered as a duplicate. Its twin reads the folder after the prefix, and holds."""
    code, report = _check(monkeypatch, "accounts", target("keyed_books"), "--template", str(CDK),
                          "--function", "Charge5C2A9E11")
    assert code == 1
    assert "silent_loss" in {r["verdict"] for r in report["results"]}
    code, report = _check(monkeypatch, "accounts", target("account_after_prefix"), "--template", str(CDK),
                          "--function", "Charge5C2A9E11")
    assert code == 0, report["verdicts"]
