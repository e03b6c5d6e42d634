"""The checks AWS makes when it creates this stack, run on the expanded template.

moto's CloudFormation creates whatever it is given: it never asks whether a role may send
to the queue it names, whether a bucket may notify a queue, or whether a name is too long.
AWS does, at create time, and a stack that breaks one of these rules rolls back on a real
account. `violations()` reads the template as CloudFormation would create it (both
transforms expanded, conditions resolved: see template.py) and lists each rule it breaks,
one readable line each. Each rule cites the page that states it.

The IAM model is deliberately small: a grant matches when an Allow statement names the
action (or a `service:*` / `*` wildcard) and a resource pattern that matches the target's
ARN (`*` and `?` as IAM reads them). The template's policies use nothing more.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Iterable

#: Where the names are evaluated: a real-looking account, the longest region names AWS uses
#: (14 characters, e.g. ap-southeast-2), and the stack names this project deploys under.
ACCOUNT = "123456789012"
LONGEST_REGION = "ap-southeast-2"
PARTITION = "aws"

#: Name limits AWS enforces at create time: (property, resource type) -> (min, max, pattern).
#: - Lambda FunctionName: "If you specify only the function name, it is limited to 64
#:   characters" https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html
#: - IAM RoleName: 1-64 https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html
#: - S3 bucket names: 3-63, lowercase letters, digits, dots, hyphens
#:   https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
#: - SQS QueueName: "up to 80 characters", alphanumerics, hyphens, underscores
#:   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
#: - CloudWatch AlarmName: 1-255 https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html
#: - DynamoDB TableName: 3-255, [a-zA-Z0-9_.-]
#:   https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html
#: - CloudWatch Logs logGroupName: 1-512, [\.\-_/#A-Za-z0-9]
#:   https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html
#: - SNS topic Name: up to 256, alphanumerics, hyphens, underscores
#:   https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html
#: - EventBridge Scheduler Name: 1-64 https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html
NAME_RULES: dict[tuple[str, str], tuple[int, int, str]] = {
    ("AWS::Lambda::Function", "FunctionName"): (1, 64, r"[a-zA-Z0-9\-_]+"),
    ("AWS::IAM::Role", "RoleName"): (1, 64, r"[\w+=,.@-]+"),
    ("AWS::S3::Bucket", "BucketName"): (3, 63, r"[a-z0-9][a-z0-9.\-]*[a-z0-9]"),
    ("AWS::SQS::Queue", "QueueName"): (1, 80, r"[a-zA-Z0-9\-_]+(\.fifo)?"),
    ("AWS::CloudWatch::Alarm", "AlarmName"): (1, 255, r".+"),
    ("AWS::DynamoDB::Table", "TableName"): (3, 255, r"[a-zA-Z0-9_.\-]+"),
    ("AWS::Logs::LogGroup", "LogGroupName"): (1, 512, r"[.\-_/#A-Za-z0-9]+"),
    ("AWS::SNS::Topic", "TopicName"): (1, 256, r"[a-zA-Z0-9\-_]+"),
    ("AWS::Scheduler::Schedule", "Name"): (1, 64, r"[0-9a-zA-Z\-_.]+"),
}
_NAME_PROPERTY = {kind: prop for kind, prop in NAME_RULES}


@dataclass(frozen=True)
class Violation:
    resource: str  # logical id
    rule: str  # what AWS refuses, in a sentence

    def __str__(self) -> str:
        return f"{self.resource}: {self.rule}"


class Unresolved(ValueError):
    """A Ref, GetAtt or ${} that names nothing in the template."""


# -- evaluating the template's names and ARNs --------------------------------------------
class Names:
    """Physical names, Refs and ARNs of the template's resources, as AWS would make them
    for one stack name in one region (generated names as CloudFormation makes them:
    stack-LogicalId-RANDOM, which always fit)."""

    def __init__(self, cfn: dict[str, Any], stack: str, region: str = LONGEST_REGION) -> None:
        self.cfn, self.stack, self.region = cfn, stack, region
        self.resources: dict[str, Any] = cfn["Resources"]
        self.parameters = {name: spec.get("Default", "") for name, spec in (cfn.get("Parameters") or {}).items()}
        self.pseudo = {"AWS::StackName": stack, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                       "AWS::Partition": PARTITION, "AWS::URLSuffix": "amazonaws.com",
                       "AWS::StackId": f"arn:aws:cloudformation:{region}:{ACCOUNT}:stack/{stack}/id",
                       "AWS::NotificationARNs": "", "AWS::NoValue": ""}
        self._names: dict[str, str] = {}

    def name(self, logical: str) -> str:
        """The resource's physical name: its name property evaluated, or a generated one."""
        if logical not in self._names:
            resource = self.resources[logical]
            prop = _NAME_PROPERTY.get(resource["Type"])
            given = resource.get("Properties", {}).get(prop) if prop else None
            self._names[logical] = (str(self.value(given)) if given is not None
                                    else f"{self.stack[:20]}-{logical[:20]}-ABCDEF123456")
        return self._names[logical]

    def arn(self, logical: str) -> str:
        kind, name, r, a = self.resources[logical]["Type"], self.name(logical), self.region, ACCOUNT
        return {
            "AWS::SQS::Queue": f"arn:aws:sqs:{r}:{a}:{name}",
            "AWS::S3::Bucket": f"arn:aws:s3:::{name}",
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{r}:{a}:table/{name}",
            "AWS::Lambda::Function": f"arn:aws:lambda:{r}:{a}:function:{name}",
            "AWS::IAM::Role": f"arn:aws:iam::{a}:role/{name}",
            "AWS::Logs::LogGroup": f"arn:aws:logs:{r}:{a}:log-group:{name}:*",
            "AWS::SNS::Topic": f"arn:aws:sns:{r}:{a}:{name}",
            "AWS::Scheduler::Schedule": f"arn:aws:scheduler:{r}:{a}:schedule/default/{name}",
        }.get(kind, f"arn:aws:{kind.split('::')[1].lower()}:{r}:{a}:{name}")

    def ref(self, target: str) -> str:
        if target in self.pseudo:
            return self.pseudo[target]
        if target in self.parameters:
            return str(self.parameters[target])
        if target not in self.resources:
            raise Unresolved(f"Ref {target} names no resource or parameter")
        kind = self.resources[target]["Type"]
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT}/{self.name(target)}"
        if kind == "AWS::SNS::Topic":
            return self.arn(target)
        if kind in ("AWS::Lambda::Alias", "AWS::Lambda::Version"):  # Ref: the qualified ARN
            props = self.resources[target]["Properties"]
            function = self.value(props["FunctionName"])
            arn = function if str(function).startswith("arn:") else f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{function}"
            return f"{arn}:{props['Name'] if kind == 'AWS::Lambda::Alias' else '1'}"
        return self.name(target)

    def get_att(self, target: str, attribute: str) -> str:
        if target not in self.resources:
            raise Unresolved(f"GetAtt {target}.{attribute} names no resource")
        kind = self.resources[target]["Type"]
        known = {"Arn": self.arn, "QueueName": self.name, "TopicName": self.name,
                 "QueueUrl": self.ref, "TopicArn": self.arn}
        allowed = {"AWS::SQS::Queue": {"Arn", "QueueName", "QueueUrl"},
                   "AWS::SNS::Topic": {"TopicName", "TopicArn"},
                   "AWS::DynamoDB::Table": {"Arn", "StreamArn"},
                   "AWS::Lambda::Version": {"Version", "FunctionArn"},
                   "AWS::Lambda::Url": {"FunctionUrl", "FunctionArn"}}.get(kind, {"Arn"})
        if attribute not in allowed:
            raise Unresolved(f"GetAtt {target}.{attribute}: {kind} has no attribute {attribute}")
        if kind == "AWS::Lambda::Url":  # https://<url-id>.lambda-url.<region>.on.aws/
            return f"https://{target.lower()}.lambda-url.{self.region}.on.aws/" if attribute == "FunctionUrl" else (
                self.value(self.resources[target]["Properties"]["TargetFunctionArn"]))
        if kind == "AWS::Lambda::Version":  # a version's number, and its qualified ARN
            return "1" if attribute == "Version" else self.ref(target)
        if attribute == "StreamArn":
            return self.arn(target) + "/stream/1970-01-01T00:00:00.000"
        return known[attribute](target)

    def value(self, node: Any) -> Any:
        """Evaluate Ref, GetAtt, Sub, Join, Select, Split, If-free templates to strings."""
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                target, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(target, attribute)
            if fn == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return self.sub(text, {k: self.value(v) for k, v in variables.items()})
            if fn == "Fn::Join":
                return str(arg[0]).join(str(self.value(item)) for item in self.value(arg[1]))
            if fn == "Fn::Select":
                return self.value(arg[1])[int(self.value(arg[0]))]
            if fn == "Fn::Split":
                return str(self.value(arg[1])).split(arg[0])
            if fn == "Fn::GetAZs":
                return [f"{self.region}a", f"{self.region}b"]
        return {key: self.value(item) for key, item in node.items()}

    def sub(self, text: str, variables: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and name.split(".", 1)[0] in self.resources:
                return self.get_att(*name.split(".", 1))
            return self.ref(name)
        return re.sub(r"\$\{([^}]+)\}", one, text)


# -- IAM, as far as these policies need it -----------------------------------------------
def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_allows(names: Names, role: str, action: str, arn: str) -> bool:
    """Whether one of the role's inline policies allows `action` on `arn`."""
    props = names.resources[role]["Properties"]
    if props.get("ManagedPolicyArns"):
        raise ValueError(f"{role} has managed policies: their grants cannot be read here")
    for policy in props.get("Policies", []):
        if _document_allows(names, policy["PolicyDocument"], action, arn, principal=None):
            return True
    return False


def _document_allows(names: Names, document: dict[str, Any], action: str, arn: str,
                     principal: str | None, source_arn: str | None = None) -> bool:
    allowed = False
    for statement in _listed(document["Statement"]):
        actions = [str(a).lower() for a in _listed(statement.get("Action", []))]
        if not any(fnmatch.fnmatchcase(action.lower(), a) for a in actions):
            continue
        resources = [str(names.value(r)) for r in _listed(statement.get("Resource", []))]
        if not any(fnmatch.fnmatchcase(arn, r) for r in resources):
            continue
        if principal is not None and not _principal_matches(statement.get("Principal"), principal):
            continue
        if principal is not None and not _conditions_hold(names, statement.get("Condition", {}), source_arn):
            continue
        if statement["Effect"] == "Deny":
            return False
        allowed = True
    return allowed


def _principal_matches(given: Any, service: str) -> bool:
    if given == "*":
        return True
    if isinstance(given, dict):
        return service in _listed(given.get("Service", [])) or given.get("AWS") == "*"
    return False


def _conditions_hold(names: Names, condition: dict[str, Any], source_arn: str | None) -> bool:
    for operator, tests in condition.items():
        for key, expected in tests.items():
            wanted = [str(names.value(e)) for e in _listed(expected)]
            if key.lower() == "aws:sourcearn":
                if source_arn is None:
                    return False
                if operator in ("ArnEquals", "StringEquals") and source_arn not in wanted:
                    return False
                if operator in ("ArnLike", "StringLike") and not any(
                        fnmatch.fnmatchcase(source_arn, w) for w in wanted):
                    return False
            elif key.lower() == "aws:sourceaccount":
                if ACCOUNT not in wanted:
                    return False
    return True


def queue_policy_allows(names: Names, queue: str, service: str, action: str, source_arn: str) -> bool:
    """Whether an AWS::SQS::QueuePolicy on the queue allows a service principal to act."""
    queue_url = names.ref(queue)
    for _logical, resource in names.resources.items():
        if resource["Type"] != "AWS::SQS::QueuePolicy":
            continue
        props = resource["Properties"]
        if queue_url not in [names.value(q) for q in props["Queues"]]:
            continue
        if _document_allows(names, props["PolicyDocument"], action, names.arn(queue), service, source_arn):
            return True
    return False


# -- the rules -----------------------------------------------------------------------------
def violations(cfn: dict[str, Any], stack: str, region: str = LONGEST_REGION) -> list[Violation]:
    """Every create-time rule the resolved template breaks, for one stack name."""
    names = Names(cfn, stack, region)
    found: list[Violation] = []
    found += _references(names)
    if found:  # the rest reads references; an unresolved one would only repeat itself
        return found
    found += _names(names)
    found += _destinations(names)
    found += _event_source_mappings(names)
    found += _notifications(names)
    found += _redrive(names)
    return found


def _walk(node: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, item in node.items():
            yield key, item
            yield from _walk(item)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _references(names: Names) -> list[Violation]:
    """Every Ref, GetAtt and ${} names a resource, parameter or pseudo parameter, and every
    DependsOn a resource (CloudFormation: "Template format error: Unresolved resource
    dependencies ... in the Resources block of the template")."""
    found = []
    for logical, resource in names.resources.items():
        for dependency in _listed(resource.get("DependsOn", [])):
            if dependency not in names.resources:
                found.append(Violation(logical, f"DependsOn {dependency} names no resource"))
        try:
            names.value(resource.get("Properties", {}))
            names.value(resource.get("Metadata", {}))
        except Unresolved as error:
            found.append(Violation(logical, str(error)))
    for output, entry in (names.cfn.get("Outputs") or {}).items():
        try:
            names.value(entry)
        except Unresolved as error:
            found.append(Violation(f"Outputs.{output}", str(error)))
    return found


def _names(names: Names) -> list[Violation]:
    found = []
    for logical, resource in names.resources.items():
        prop = _NAME_PROPERTY.get(resource["Type"])
        if not prop or prop not in resource.get("Properties", {}):
            continue
        low, high, pattern = NAME_RULES[(resource["Type"], prop)]
        name = names.name(logical)
        if not low <= len(name) <= high:
            found.append(Violation(logical, f"{prop} {name!r} is {len(name)} characters; "
                                            f"AWS accepts {low} to {high}"))
        elif not re.fullmatch(pattern, name):
            found.append(Violation(logical, f"{prop} {name!r} does not match {pattern}"))
    return found


def _mentions(node: Any) -> set[str]:
    """The logical ids a piece of template names by Ref, GetAtt or ${}."""
    found: set[str] = set()
    for key, item in _walk(node):
        if key == "Ref" and isinstance(item, str):
            found.add(item)
        elif key == "Fn::GetAtt":
            found.add(item[0] if isinstance(item, list) else str(item).split(".")[0])
        elif key == "Fn::Sub":
            text = item if isinstance(item, str) else item[0]
            found |= {name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
    return found


def created_before(names: Names, logical: str) -> set[str]:
    """Every resource CloudFormation must finish before it starts `logical`: what it names
    (DependsOn, Ref, GetAtt, ${}), and what those name, all the way down. A reference in
    Metadata counts too: it is how a template makes a DependsOn conditional."""
    seen: set[str] = set()
    todo = [logical]
    while todo:
        resource = names.resources[todo.pop()]
        for other in set(_listed(resource.get("DependsOn", []))) | _mentions(resource):
            if other in names.resources and other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def _function_role(names: Names, function: str) -> str:
    role = names.resources[function]["Properties"]["Role"]
    target = role.get("Fn::GetAtt") if isinstance(role, dict) else None
    if not target:
        raise ValueError(f"{function}'s role is not a role of this template")
    return target[0] if isinstance(target, list) else target.split(".")[0]


def _function_of(names: Names, value: Any) -> str:
    """The logical id of the function a FunctionName/Function property names."""
    wanted = str(names.value(value))
    for logical, resource in names.resources.items():
        if resource["Type"] == "AWS::Lambda::Function" and (
                wanted in (names.name(logical), names.arn(logical))
                or wanted.rsplit(":", 1)[0] == names.arn(logical)):  # an alias's or a version's ARN
            return logical
    raise ValueError(f"{value!r} names no function of this template")


def _logical_of_arn(names: Names, arn: str) -> str | None:
    for logical in names.resources:
        if names.arn(logical) == arn:
            return logical
    return None


#: What Lambda checks on the function's execution role when an async destination or a
#: dead-letter queue is configured ("The provided execution role does not have permissions
#: to call SendMessage on SQS"): https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html
#: (destinations) and https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq
_DESTINATION_ACTION = {"sqs": "sqs:SendMessage", "sns": "sns:Publish", "lambda": "lambda:InvokeFunction",
                       "events": "events:PutEvents", "s3": "s3:PutObject"}


def _destinations(names: Names) -> list[Violation]:
    found = []
    for logical, resource in names.resources.items():
        props = resource.get("Properties", {})
        targets: list[tuple[str, str, str]] = []  # (function, what, arn)
        if resource["Type"] == "AWS::Lambda::EventInvokeConfig":
            function = _function_of(names, props["FunctionName"])
            for outcome in ("OnFailure", "OnSuccess"):
                destination = props.get("DestinationConfig", {}).get(outcome, {}).get("Destination")
                if destination is not None:
                    targets.append((function, f"its {outcome} destination", str(names.value(destination))))
        if resource["Type"] == "AWS::Lambda::Function" and props.get("DeadLetterConfig", {}).get("TargetArn"):
            targets.append((logical, "its dead-letter queue", str(names.value(props["DeadLetterConfig"]["TargetArn"]))))
        for function, what, arn in targets:
            service = arn.split(":")[2]
            action = _DESTINATION_ACTION.get(service)
            role = _function_role(names, function)
            if action is None:
                found.append(Violation(logical, f"{what} {arn} is not a destination Lambda accepts"))
            elif not role_allows(names, role, action, arn):
                target = _logical_of_arn(names, arn) or arn
                found.append(Violation(logical, f"{function}'s role {role} may not {action} on {target}, "
                                                f"{what}: Lambda refuses the configuration"))
    return found


#: An SQS event source mapping needs, on the function's role, sqs:ReceiveMessage,
#: sqs:DeleteMessage and sqs:GetQueueAttributes on the queue (Lambda checks them when the
#: mapping is created): https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html
#: The function's timeout must not exceed the queue's visibility timeout ("Lambda validates
#: this requirement when you create or update an event source mapping"), same page; a batch
#: of more than 10 needs MaximumBatchingWindowInSeconds of at least 1, and ScalingConfig's
#: MaximumConcurrency is 2 to 1000:
#: https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html
SQS_MAPPING_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


def _event_source_mappings(names: Names) -> list[Violation]:
    found = []
    for logical, resource in names.resources.items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        props = resource["Properties"]
        function = _function_of(names, props["FunctionName"])
        source = str(names.value(props["EventSourceArn"]))
        queue = _logical_of_arn(names, source)
        if not source.startswith("arn:aws:sqs:") or queue is None:
            continue
        role = _function_role(names, function)
        for action in SQS_MAPPING_ACTIONS:
            if not role_allows(names, role, action, source):
                found.append(Violation(logical, f"{function}'s role {role} may not {action} on {queue}: "
                                                f"Lambda refuses the event source mapping"))
        visibility = int(names.resources[queue]["Properties"].get("VisibilityTimeout", 30))
        timeout = int(names.resources[function]["Properties"].get("Timeout", 3))
        if timeout > visibility:
            found.append(Violation(logical, f"{function}'s timeout {timeout} s exceeds {queue}'s visibility "
                                            f"timeout {visibility} s: Lambda refuses the mapping"))
        batch = int(props.get("BatchSize", 10))
        if batch > 10 and int(props.get("MaximumBatchingWindowInSeconds", 0)) < 1:
            found.append(Violation(logical, f"BatchSize {batch} > 10 needs MaximumBatchingWindowInSeconds >= 1"))
        scaling = props.get("ScalingConfig", {}).get("MaximumConcurrency")
        if scaling is not None and not 2 <= int(scaling) <= 1000:
            found.append(Violation(logical, f"ScalingConfig MaximumConcurrency {scaling} is outside 2 to 1000"))
    return found


#: S3 tests each destination when the notification is put ("Unable to validate the following
#: destination configurations"): a function needs a resource policy allowing s3.amazonaws.com
#: lambda:InvokeFunction, a queue a policy allowing s3.amazonaws.com sqs:SendMessage; both must
#: exist first (DependsOn), and a queue encrypted with the AWS managed key alias/aws/sqs cannot
#: receive from S3 (SSE-SQS can).
#: https://docs.aws.amazon.com/AmazonS3/latest/userguide/grant-destinations-permissions-to-s3.html
def _notifications(names: Names) -> list[Violation]:
    found = []
    for logical, resource in names.resources.items():
        if resource["Type"] != "AWS::S3::Bucket":
            continue
        props = resource.get("Properties", {})
        bucket_arn = names.arn(logical)
        depends = created_before(names, logical)
        config = props.get("NotificationConfiguration", {})
        functions = dict.fromkeys(_function_of(names, e["Function"]) for e in config.get("LambdaConfigurations", []))
        for function in functions:  # one line per function, however many events it gets
            permits = [p for p, r in names.resources.items() if r["Type"] == "AWS::Lambda::Permission"
                       and _function_of(names, r["Properties"]["FunctionName"]) == function
                       and r["Properties"].get("Principal") == "s3.amazonaws.com"
                       and r["Properties"].get("Action") in ("lambda:InvokeFunction", "lambda:*")
                       and fnmatch.fnmatchcase(bucket_arn, str(names.value(r["Properties"].get("SourceArn", "*"))))]
            if not permits:
                found.append(Violation(logical, f"no permission lets s3.amazonaws.com invoke {function}: "
                                                f"S3 refuses the notification"))
            elif not depends & set(permits):
                found.append(Violation(logical, f"the bucket does not DependsOn {permits[0]}: S3 may test "
                                                f"{function} before the permission exists"))
        queues = dict.fromkeys(str(names.value(e["Queue"])) for e in config.get("QueueConfigurations", []))
        for queue_arn in queues:
            queue = _logical_of_arn(names, queue_arn)
            if queue is None:
                found.append(Violation(logical, f"notifies {queue_arn}, not a queue of this template"))
                continue
            if not queue_policy_allows(names, queue, "s3.amazonaws.com", "sqs:SendMessage", bucket_arn):
                found.append(Violation(logical, f"{queue}'s policy does not let s3.amazonaws.com "
                                                f"sqs:SendMessage from this bucket: S3 refuses the notification"))
            policies = {p for p, r in names.resources.items() if r["Type"] == "AWS::SQS::QueuePolicy"}
            if not depends & policies:
                found.append(Violation(logical, f"the bucket does not DependsOn {queue}'s policy: S3 may test "
                                                f"the queue before the policy exists"))
            key = str(names.value(names.resources[queue]["Properties"].get("KmsMasterKeyId", "")))
            if key in ("alias/aws/sqs",):
                found.append(Violation(logical, f"{queue} is encrypted with alias/aws/sqs, which S3 cannot "
                                                f"use: use SqsManagedSseEnabled or a customer managed key"))
    return found


#: A redrive policy names an existing queue (deadLetterTargetArn: so it is created first) and a maxReceiveCount of
#: 1 to 1,000; "the expiration of a message is always based on its original enqueue
#: timestamp", so a dead-letter queue should keep messages longer than its source:
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html
def _redrive(names: Names) -> list[Violation]:
    found = []
    for logical, resource in names.resources.items():
        if resource["Type"] != "AWS::SQS::Queue":
            continue
        redrive = resource.get("Properties", {}).get("RedrivePolicy")
        if not redrive:
            continue
        target = _logical_of_arn(names, str(names.value(redrive["deadLetterTargetArn"])))
        if target is None:
            found.append(Violation(logical, "its redrive policy names no queue of this template"))
            continue
        if target not in created_before(names, logical):
            found.append(Violation(logical, f"its dead-letter queue {target} may be created after it: "
                                            f"SQS refuses a redrive policy to a queue that does not exist"))
        if not 1 <= int(redrive["maxReceiveCount"]) <= 1000:
            found.append(Violation(logical, f"maxReceiveCount {redrive['maxReceiveCount']} is outside 1 to 1000"))
        mine = int(resource["Properties"].get("MessageRetentionPeriod", 345600))
        theirs = int(names.resources[target]["Properties"].get("MessageRetentionPeriod", 345600))
        if theirs < mine:
            found.append(Violation(logical, f"its dead-letter queue {target} keeps messages {theirs} s, "
                                            f"less than its own {mine} s: a message can expire on the way"))
    return found
