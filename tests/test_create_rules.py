"""The checks AWS makes when it creates the stack (idem/deploy/aws_rules/create_rules.py), on the
template as CloudFormation would create it: both profiles, both samconfig stacks and the
longest stack name the deploy tool accepts, in a region with the longest name. moto's
CloudFormation checks none of them; each rule is also shown to catch a planted breach."""
from __future__ import annotations

import copy

import pytest

from idem.deploy.aws_rules import create_rules as rules
from idem.deploy import names
from idem.deploy import template as tp

PROFILES = {"prod": {"Profile": "prod", "AlarmEmail": "ops@example.com"},
            # a prod stack adopting what a deleted one kept: nothing it names is its own resource
            "adopting": {"Profile": "prod", "AlarmEmail": "ops@example.com", "AdoptRetained": "yes"},
            "demo": {"Profile": "demo", "HandlerMode": "keyed"}}
#: samconfig.toml's two stacks, and the longest name `python -m idem deploy` lets through.
STACKS = ("idem-demo", "idem-prod", "s" * names.longest_stack_name(rules.LONGEST_REGION))


@pytest.fixture(scope="module", params=sorted(PROFILES))
def created(request):
    parameters = PROFILES[request.param]
    return _created(parameters)


def _created(parameters):
    """As CloudFormation would create it, in the region the names are checked in (the SAM
    transform fills some pseudo parameters in itself, so both must agree)."""
    return tp.resolve(tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"), parameters,
                                   region=rules.LONGEST_REGION), parameters)


@pytest.mark.parametrize("stack", STACKS)
def test_aws_would_create_the_stack(created, stack):
    assert [str(v) for v in rules.violations(created, stack)] == []


# -- each rule catches what it is for -----------------------------------------------------
def _statements(cfn, role):
    return cfn["Resources"][role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]


def _without_sid(cfn, role, sid):
    broken = copy.deepcopy(cfn)
    statements = _statements(broken, role)
    kept = [s for s in statements if s.get("Sid") != sid]
    assert len(kept) == len(statements) - 1, f"{role} has no statement {sid}"
    _statements(broken, role)[:] = kept
    return broken


@pytest.fixture(scope="module")
def demo():
    return _created(PROFILES["demo"])


@pytest.fixture(scope="module")
def prod():
    return _created(PROFILES["prod"])


def test_a_destination_the_role_may_not_send_to_is_refused(demo):
    broken = _without_sid(demo, "ChargeFunctionRole", "FailureDestination")
    found = [str(v) for v in rules.violations(broken, "idem-demo")]
    assert found == ["ChargeFunctionEventInvokeConfig: ChargeFunction's role ChargeFunctionRole may not "
                     "sqs:SendMessage on FailureQueue, its OnFailure destination: Lambda refuses the configuration"]


def test_a_destination_on_another_queue_than_granted_is_refused(demo):
    broken = copy.deepcopy(demo)
    config = broken["Resources"]["ReconcileFunctionEventInvokeConfig"]["Properties"]
    config["DestinationConfig"]["OnFailure"]["Destination"] = {"Fn::GetAtt": ["FailureQueue", "Arn"]}
    found = [str(v) for v in rules.violations(broken, "idem-demo")]
    assert found == ["ReconcileFunctionEventInvokeConfig: ReconcileFunction's role ReconcileFunctionRole may "
                     "not sqs:SendMessage on FailureQueue, its OnFailure destination: Lambda refuses the "
                     "configuration"]


def test_a_bucket_that_may_not_invoke_its_function_is_refused(demo):
    broken = copy.deepcopy(demo)
    del broken["Resources"]["ChargeFunctionUploadPermission"]
    broken["Resources"]["UploadNotificationReady"]["Metadata"]["Permission"] = ""
    found = [str(v) for v in rules.violations(broken, "idem-demo")]
    assert found == ["UploadBucket: no permission lets s3.amazonaws.com invoke ChargeFunction: "
                     "S3 refuses the notification"]


def test_an_unresolved_reference_is_refused(demo):
    broken = copy.deepcopy(demo)
    broken["Resources"]["ChargeFunction"]["Properties"]["Environment"]["Variables"]["X"] = {"Ref": "Nowhere"}
    broken["Resources"]["UploadBucket"]["DependsOn"] = ["Gone"]
    found = {str(v) for v in rules.violations(broken, "idem-demo")}
    assert found == {"ChargeFunction: Ref Nowhere names no resource or parameter",
                     "UploadBucket: DependsOn Gone names no resource"}


def test_a_getatt_of_an_attribute_the_type_lacks_is_refused(demo):
    broken = copy.deepcopy(demo)
    broken["Resources"]["ChargeFunction"]["Properties"]["Environment"]["Variables"]["X"] = {
        "Fn::GetAtt": ["LedgerTable", "QueueUrl"]}
    assert [str(v) for v in rules.violations(broken, "idem-demo")] == [
        "ChargeFunction: GetAtt LedgerTable.QueueUrl: AWS::DynamoDB::Table has no attribute QueueUrl"]


def test_a_bucket_created_before_its_queue_policy_is_refused(prod):
    broken = copy.deepcopy(prod)
    broken["Resources"]["UploadNotificationReady"]["Metadata"]["QueuePolicy"] = ""
    assert [str(v) for v in rules.violations(broken, "idem-prod")] == [
        "UploadBucket: the bucket does not DependsOn UploadQueue's policy: S3 may test the queue "
        "before the policy exists"]


def test_a_queue_policy_that_does_not_let_s3_send_is_refused(prod):
    broken = copy.deepcopy(prod)
    statement = broken["Resources"]["UploadQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    statement["Condition"]["ArnLike"]["aws:SourceArn"] = "arn:aws:s3:::some-other-bucket"
    assert [str(v) for v in rules.violations(broken, "idem-prod")] == [
        "UploadBucket: UploadQueue's policy does not let s3.amazonaws.com sqs:SendMessage from this "
        "bucket: S3 refuses the notification"]


def test_an_event_source_mapping_the_role_may_not_read_is_refused(prod):
    broken = _without_sid(prod, "ChargeFunctionRole", "UploadQueue")
    assert len(rules.violations(broken, "idem-prod")) == 3  # Receive, Delete, GetQueueAttributes


def test_a_visibility_timeout_shorter_than_the_function_is_refused(prod):
    broken = copy.deepcopy(prod)
    broken["Resources"]["UploadQueue"]["Properties"]["VisibilityTimeout"] = 20
    assert [str(v) for v in rules.violations(broken, "idem-prod")] == [
        "ChargeFunctionUploads: ChargeFunction's timeout 60 s exceeds UploadQueue's visibility timeout "
        "20 s: Lambda refuses the mapping"]


def test_names_past_their_limits_are_refused(demo):
    long_stack = "s" * 60
    found = {str(v).split(":")[0] for v in rules.violations(demo, long_stack)}
    # 60 + "-uploads-" + 12 + "-" + 14 > 63; 60 + "-reconcile" > 64
    assert {"UploadBucket", "ReportBucket", "ChargeFunction", "ReconcileFunction"} <= found


def test_the_name_limits_are_the_documented_ones():
    assert rules.NAME_RULES[("AWS::Lambda::Function", "FunctionName")][:2] == (1, 64)
    assert rules.NAME_RULES[("AWS::IAM::Role", "RoleName")][:2] == (1, 64)
    assert rules.NAME_RULES[("AWS::S3::Bucket", "BucketName")][:2] == (3, 63)
    assert rules.NAME_RULES[("AWS::SQS::Queue", "QueueName")][:2] == (1, 80)
    assert rules.NAME_RULES[("AWS::CloudWatch::Alarm", "AlarmName")][:2] == (1, 255)
