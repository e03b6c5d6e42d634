"""The settings moto's CloudFormation drops, read from the expanded template and checked.

moto creates the stack's resources but silently leaves out bucket versioning, the bucket's
notification, the table's TTL and the function's event-invoke config. `check()` compares
each one, as the translated template states it, with what the deployed resource holds;
`apply()` sets a missing one with the same boto3 call a person would make. On real AWS
the same check should find every setting present.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .. import template as tp


@dataclass(frozen=True)
class Gap:
    resource: str  # logical id in the template
    setting: str
    wanted: str  # as the template says it
    found: str  # as the deployed resource holds it
    call: str  # the boto3 call that sets it
    request: dict[str, Any]  # that call's arguments

    @property
    def missing(self) -> bool:
        return self.wanted != self.found

    def row(self) -> dict[str, str]:
        return {"resource": self.resource, "setting": self.setting, "template": self.wanted,
                "deployed": self.found, "fix": self.call if self.missing else "-"}


def check(cfn: dict[str, Any], physical: dict[str, str], clients: dict[str, Any]) -> list[Gap]:
    """Every dropped-by-moto setting the template asks for, wanted vs found."""
    s3, dynamodb, lam, sqs = clients["s3"], clients["dynamodb"], clients["lambda"], clients["sqs"]
    gaps = []
    function_name = physical[tp.FUNCTION]
    function_arn = lam.get_function_configuration(FunctionName=function_name)["FunctionArn"]

    for bucket_id, bucket in tp.resources_of_type(cfn, "AWS::S3::Bucket").items():
        name = physical[bucket_id]
        props = bucket["Properties"]
        if "VersioningConfiguration" in props:
            status = props["VersioningConfiguration"]["Status"]
            found = s3.get_bucket_versioning(Bucket=name).get("Status", "never enabled")
            gaps.append(Gap(bucket_id, "versioning", status, found, "put_bucket_versioning",
                            {"Bucket": name, "VersioningConfiguration": {"Status": status}}))
        lambdas = props.get("NotificationConfiguration", {}).get("LambdaConfigurations", [])
        if lambdas:
            wanted = [{"LambdaFunctionArn": _function_arn(c["Function"], physical, function_arn),
                       "Events": [c["Event"]]} for c in lambdas]
            configured = s3.get_bucket_notification_configuration(Bucket=name)
            found_pairs = sorted((c["LambdaFunctionArn"], e) for c in
                                 configured.get("LambdaFunctionConfigurations", []) for e in c["Events"])
            gaps.append(Gap(bucket_id, "notification", _pairs_text(wanted, physical),
                            _pairs_text([{"LambdaFunctionArn": a, "Events": [e]} for a, e in found_pairs],
                                        physical),
                            "put_bucket_notification_configuration",
                            {"Bucket": name,
                             "NotificationConfiguration": {"LambdaFunctionConfigurations": wanted}}))

        queues = props.get("NotificationConfiguration", {}).get("QueueConfigurations", [])
        if queues:  # prod: S3 -> SQS (moto's CloudFormation drops it as it drops the Lambda one)
            wanted_q = [{"QueueArn": _queue_arn(c["Queue"], physical, sqs), "Events": [c["Event"]]} for c in queues]
            configured = s3.get_bucket_notification_configuration(Bucket=name)
            found_q = sorted((c["QueueArn"], e) for c in configured.get("QueueConfigurations", [])
                             for e in c["Events"])
            gaps.append(Gap(bucket_id, "notification", _queue_pairs_text(wanted_q),
                            _queue_pairs_text([{"QueueArn": a, "Events": [e]} for a, e in found_q]),
                            "put_bucket_notification_configuration",
                            {"Bucket": name, "NotificationConfiguration": {"QueueConfigurations": wanted_q}}))

    for policy_id, policy in tp.resources_of_type(cfn, "AWS::SQS::QueuePolicy").items():
        # moto's CloudFormation does not make AWS::SQS::QueuePolicy: the policy is set on the queue.
        document = policy["Properties"]["PolicyDocument"]
        for queue in policy["Properties"]["Queues"]:
            queue_url = physical[tp.ref_name(queue)]
            arn = _queue_arn(queue, physical, sqs)
            wanted_doc = _evaluated(document, physical, arn)
            found_doc = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["Policy"]).get(
                "Attributes", {}).get("Policy", "")
            gaps.append(Gap(policy_id, "queue policy", _policy_text(json.dumps(wanted_doc)),
                            _policy_text(found_doc), "set_queue_attributes",
                            {"QueueUrl": queue_url, "Attributes": {"Policy": json.dumps(wanted_doc)}}))

    for table_id, table in tp.resources_of_type(cfn, "AWS::DynamoDB::Table").items():
        ttl = table["Properties"].get("TimeToLiveSpecification")
        if not ttl:
            continue
        name = physical[table_id]
        found = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        found_text = (f"{found.get('AttributeName')} {found['TimeToLiveStatus'].lower()}"
                      if found.get("AttributeName") else found["TimeToLiveStatus"].lower())
        wanted_text = f"{ttl['AttributeName']} {'enabled' if ttl['Enabled'] else 'disabled'}"
        gaps.append(Gap(table_id, "TTL", wanted_text, found_text, "update_time_to_live",
                        {"TableName": name, "TimeToLiveSpecification": dict(ttl)}))

    for config_id, config in tp.resources_of_type(cfn, "AWS::Lambda::EventInvokeConfig").items():
        props = config["Properties"]
        destination = props["DestinationConfig"]["OnFailure"]["Destination"]
        queue_arn = _queue_arn(destination, physical, sqs)
        function_name = physical[tp.ref_name(props["FunctionName"])]  # the charge or the reconcile function
        request = {"FunctionName": function_name, "Qualifier": props["Qualifier"],
                   "MaximumRetryAttempts": int(props["MaximumRetryAttempts"]),
                   # a parameter's value, which the SAM transform passes on as a string
                   "MaximumEventAgeInSeconds": int(props["MaximumEventAgeInSeconds"]),
                   "DestinationConfig": {"OnFailure": {"Destination": queue_arn}}}
        try:
            got = lam.get_function_event_invoke_config(FunctionName=function_name,
                                                       Qualifier=props["Qualifier"])
            found_text = _invoke_text(got.get("MaximumRetryAttempts"), got.get("MaximumEventAgeInSeconds"),
                                      got.get("DestinationConfig", {}).get("OnFailure", {})
                                      .get("Destination", ""), physical)
        except ClientError as error:
            if error.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
            found_text = "none"
        gaps.append(Gap(config_id, "retries, max age, on failure",
                        _invoke_text(request["MaximumRetryAttempts"], request["MaximumEventAgeInSeconds"],
                                     queue_arn, physical),
                        found_text, "put_function_event_invoke_config", request))
    return gaps


def apply(gaps: list[Gap], clients: dict[str, Any]) -> list[Gap]:
    """Make each missing setting with its boto3 call. Returns the gaps that were filled."""
    services = {"put_bucket_versioning": "s3", "put_bucket_notification_configuration": "s3",
                "update_time_to_live": "dynamodb", "put_function_event_invoke_config": "lambda",
                "set_queue_attributes": "sqs"}
    # A queue's policy first: S3 tests a queue destination when its notification is put.
    filled = sorted((gap for gap in gaps if gap.missing), key=lambda gap: gap.call != "set_queue_attributes")
    for gap in filled:
        getattr(clients[services[gap.call]], gap.call)(**gap.request)
    return filled


def _function_arn(value: Any, physical: dict[str, str], function_arn: str) -> str:
    if tp.ref_name(value) != tp.FUNCTION:
        raise ValueError(f"the bucket notifies {value!r}, not {tp.FUNCTION}")
    return function_arn


def _queue_arn(value: Any, physical: dict[str, str], sqs: Any) -> str:
    queue_url = physical[tp.ref_name(value)]
    return sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _short(arn: str) -> str:
    """The last part of an ARN: a function or queue name (readable, no account id)."""
    return arn.rsplit(":", 1)[-1] if arn else "none"


def _pairs_text(configs: list[dict[str, Any]], physical: dict[str, str]) -> str:
    pairs = sorted(f"{e} -> {_short(c['LambdaFunctionArn'])}" for c in configs for e in c["Events"])
    return ", ".join(pairs) or "none"


def _invoke_text(retries: Any, age: Any, destination: str, physical: dict[str, str]) -> str:
    return f"{retries} retries, {age} s, SQS {_short(destination)}"


def _queue_pairs_text(configs: list[dict[str, Any]]) -> str:
    pairs = sorted(f"{e} -> {_short(c['QueueArn'])}" for c in configs for e in c["Events"])
    return ", ".join(pairs) or "none"


def _evaluated(document: Any, physical: dict[str, str], queue_arn: str) -> Any:
    """The policy with its !GetAtt of the queue and its !Sub names filled in, as on AWS."""
    account, region = queue_arn.split(":")[4], queue_arn.split(":")[3]
    # template.yaml names the upload bucket "${AWS::StackName}-uploads-...": the stack name is its start.
    stack = physical.get("UploadBucket", "").split("-uploads-")[0]

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::GetAtt"}:
                return queue_arn
            if set(node) == {"Ref"} and node["Ref"] == "AWS::AccountId":
                return account
            if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
                text = node["Fn::Sub"]
                for name, value in (("AWS::Partition", "aws"), ("AWS::AccountId", account),
                                    ("AWS::Region", region), ("AWS::StackName", stack)):
                    text = text.replace("${" + name + "}", value)
                return text
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(document)


def _policy_text(policy: str) -> str:
    """A queue policy, in a few words: who may do what."""
    if not policy:
        return "none"
    statements = json.loads(policy)["Statement"]
    return ", ".join(f"{s['Principal'].get('Service', s['Principal']) if isinstance(s['Principal'], dict) else s['Principal']} "
                     f"{s['Action']}" for s in statements)
