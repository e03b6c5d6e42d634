"""Chapter 09's deploy, call by call: the order CloudFormation makes the stack's resources in
(each waits for what it names: Ref, GetAtt, a ${Name} in a Sub, DependsOn, in its properties or
its metadata), and a stack made through a change set on moto, whose outputs moto 5.2 leaves out
until the harness's fill_gaps sets them."""
from __future__ import annotations

import json

import pytest

from idem.deploy import flow
from idem.deploy.local.moto_target import MotoDeployment
from idem.deploy.stack import TAGS
from idem.lessons.shipping import stack_order


def test_a_stack_goes_up_in_waves_of_what_each_resource_names():
    cfn = {"Resources": {
        "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": {"Ref": "Stage"}}},
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"Arn": {"Fn::GetAtt": ["Table", "Arn"]}}},
        "Alarm": {"Type": "AWS::CloudWatch::Alarm",
                  "Properties": {"Name": {"Fn::Sub": "${Table.Arn}-${AWS::Region}"}}},
        "Function": {"Type": "AWS::Lambda::Function", "DependsOn": "Role"},
        "Ready": {"Type": "AWS::CloudFormation::WaitConditionHandle",
                  "Metadata": {"Needs": {"Ref": "Function"}}},
    }}
    assert stack_order.waves(cfn) == [["Table"], ["Alarm", "Role"], ["Function"], ["Ready"]]
    assert stack_order.waits_for(cfn)["Table"] == set()  # a parameter is no resource to wait for


def test_a_circular_dependency_is_named_not_looped_on():
    cfn = {"Resources": {"A": {"Type": "T", "DependsOn": "B"}, "B": {"Type": "T", "DependsOn": "A"}}}
    with pytest.raises(ValueError, match="circular dependency among \\['A', 'B'\\]"):
        stack_order.waves(cfn)


def test_the_demo_stack_makes_the_permission_before_the_bucket_that_notifies_the_function():
    harness = MotoDeployment("idem-order")
    cfn = json.loads(harness.expand_transforms(flow.parameters("naive")))
    wave = {name: n for n, names in enumerate(stack_order.waves(cfn)) for name in names}
    assert wave["ChargeFunctionRole"] < wave["ChargeFunction"] < wave["ChargeFunctionUploadPermission"]
    assert wave["ChargeFunctionUploadPermission"] < wave["UploadBucket"] < wave["UploadBucketPolicy"]
    assert wave["LedgerTable"] == wave["FailureQueue"] == 0
    lines = stack_order.wave_lines(cfn)
    assert all(len(line) < 400 for line in lines) and lines[0].startswith("wave 1  ")


def test_moto_leaves_a_change_sets_outputs_out_until_fill_gaps_sets_them():
    """Pins moto 5.2's gap on purpose: ExecuteChangeSet makes the resources, not the Outputs."""
    harness = MotoDeployment("idem-changeset", say=lambda line: None)
    s3, cloudformation = harness.clients["s3"], harness.clients["cloudformation"]
    s3.create_bucket(Bucket=harness.artifacts_bucket)
    parameters = flow.parameters("naive")
    body = harness.expand_transforms(parameters)
    s3.put_object(Bucket=harness.artifacts_bucket, Key="template.json", Body=body.encode())
    change_set = {"StackName": "idem-changeset", "ChangeSetName": "create"}
    cloudformation.create_change_set(
        **change_set, ChangeSetType="CREATE",
        TemplateURL=f"https://{harness.artifacts_bucket}.s3.amazonaws.com/template.json",
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"], Tags=TAGS)
    changes = cloudformation.describe_change_set(**change_set)["Changes"]
    assert {c["ResourceChange"]["Action"] for c in changes} == {"Add"}
    assert len(changes) == len(json.loads(body)["Resources"])
    cloudformation.execute_change_set(**change_set)
    cloudformation.get_waiter("stack_create_complete").wait(StackName="idem-changeset")
    try:
        stack = cloudformation.describe_stacks(StackName="idem-changeset")["Stacks"][0]
        assert "Outputs" not in stack  # moto's gap
        harness.fill_gaps()
        stack = cloudformation.describe_stacks(StackName="idem-changeset")["Stacks"][0]
        assert {o["OutputKey"] for o in stack["Outputs"]} >= {"BucketName", "LedgerTableName"}
        events = cloudformation.describe_stack_events(StackName="idem-changeset")["StackEvents"]
        assert [e["ResourceStatus"] for e in reversed(events)] == [  # the stack's own, none per resource
            "REVIEW_IN_PROGRESS", "CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
    finally:
        assert harness.teardown() == []


def _without_the_buckets_depends_on():
    harness = MotoDeployment("idem-order")
    cfn = json.loads(harness.expand_transforms(flow.parameters("keyed")))
    return stack_order.without_depends_on(cfn, "UploadBucket")


def test_chapter_09s_wave_exercise_measures_what_its_solution_says():
    """Without its DependsOn the bucket is made beside the permission, in the wave after the
    function: nothing orders the two (the solution's 'wave 4, and no')."""
    wave = {name: n for n, names in enumerate(stack_order.waves(_without_the_buckets_depends_on()),
                                              start=1) for name in names}
    assert wave["UploadBucket"] == wave["ChargeFunctionUploadPermission"] == wave["ChargeFunction"] + 1 == 4


def test_chapter_09s_wave_check_narrows_without_stating_the_answer():
    cfn = _without_the_buckets_depends_on()
    empty = stack_order.check_wave_prediction(None, None, cfn)
    assert empty.startswith("No answer yet") and "4" not in empty and "right" not in empty
    right = stack_order.check_wave_prediction(4, False, cfn)
    assert right.count("right") == 3 and "Both right" in right  # 'right, 4', 'right, False', 'Both right'
    for wave, first in ((3, True), (5, True), (6, None), (None, True)):
        said = stack_order.check_wave_prediction(wave, first, cfn)
        assert "4" not in said and "side by side" not in said and "right" not in said, said
    assert "is not a number" in stack_order.check_wave_prediction("4", False, cfn)
    assert "is not True or False" in stack_order.check_wave_prediction(4, "no", cfn)


def test_chapter_09s_stored_wave_check_holds_no_answer():
    """The committed notebook's unanswered check says only what to fill in."""
    from pathlib import Path

    cells = json.loads((Path(__file__).parent.parent / "notebooks" / "09_deploy_to_aws.ipynb").read_text())["cells"]
    (check,) = [c for c in cells if "stack_order.check_wave_prediction(" in "".join(c["source"])]
    text = "".join("".join(o.get("text", "")) for o in check["outputs"])
    assert text.startswith("No answer yet") and "4" not in text and "right" not in text
    shown = [c for c in cells if "wave_lines(" in "".join(c["source"])]
    assert len(shown) == 1 and "without" not in "".join(shown[0]["source"])  # the changed waves: only the check
