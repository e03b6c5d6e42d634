"""`idem check --template template.yaml --function LOGICAL_ID`: the function as deployed.

Read from a SAM or CloudFormation template (YAML or JSON, short-form intrinsics too):
- the handler (`Handler`, under `CodeUri`'s folder, or the template's own folder) as FILE.py:FUNCTION;
- its environment (`Environment.Variables`, `Globals.Function` first), `MemorySize`, `Timeout`;
- its trigger, from its `Events` (S3 -> s3, SQS -> sqs, EventBridgeRule/CloudWatchEvent -> eventbridge);
- the template's resources the check can make on moto, with the names CloudFormation would give
  them (their own name property, else STACK-LogicalId): DynamoDB tables (keys, billing, global and
  local secondary indexes), SAM simple tables, SQS queues and SNS topics (FIFO too), S3 buckets,
  SES email identities, EventBridge buses. They are created before the clean run (`create`).

Parameters take the values given (`--parameter`, `--parameters-file`: `template_parameters`) or
their defaults; the function's settings as deployed are read (`deployed`), and its triggers in
every form the template can declare them (`template_triggers`); conditions are evaluated (`idem.deploy.template.resolve`), and
Ref, Fn::GetAtt, Fn::Sub and Fn::Join are resolved here, against those names and the pseudo
parameters (us-east-1, moto's account 123456789012, the stack name). The SAM transform itself is
not run: the function's own properties are read as SAM writes them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core.errors import IdemError
from . import deployed, template_parameters, template_triggers

REGION, ACCOUNT, STACK = "us-east-1", "123456789012", "idem-check"
FUNCTIONS = ("AWS::Serverless::Function", "AWS::Lambda::Function")
#: Resource types created on moto, and the property that names each.
NAMED_BY = {"AWS::DynamoDB::Table": "TableName", "AWS::Serverless::SimpleTable": "TableName",
            "AWS::SQS::Queue": "QueueName", "AWS::SNS::Topic": "TopicName", "AWS::S3::Bucket": "BucketName",
            "AWS::SES::EmailIdentity": "EmailIdentity", "AWS::Events::EventBus": "Name",
            "AWS::StepFunctions::StateMachine": "StateMachineName", "AWS::Serverless::StateMachine": "Name"}
#: A state machine's Ref is its ARN
#: (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-stepfunctions-statemachine.html).
STATE_MACHINES = ("AWS::StepFunctions::StateMachine", "AWS::Serverless::StateMachine")
#: What a state machine runs when its template gives no definition the check can read (a
#: DefinitionUri, say): one Pass state. moto records executions; it does not run them.
PASS_DEFINITION = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}


class TemplateError(IdemError, ValueError):
    """The template cannot be read, or has no such function (exit 2)."""


@dataclass
class TemplateFunction:
    logical_id: str
    target: str  # FILE.py:FUNCTION
    env: dict[str, str]
    trigger: str
    memory_mb: int
    timeout: int
    resources: list[dict[str, Any]] = field(default_factory=list)  # {"type", "id", "name", "properties"}
    #: the function's settings as deployed (`idem.explore.target.deployed.Deployed.as_dict`)
    deployed: dict[str, Any] = field(default_factory=dict)
    #: what feeds it, as declared (`template_triggers.Trigger`s); the s3 trigger's bucket, as named
    triggers: list[Any] = field(default_factory=list)
    bucket: str = ""
    #: its Layers: each a local folder (a LayerVersion's ContentUri or Content) or an ARN
    layers: list[str] = field(default_factory=list)
    #: what Lambda runs it on: its Runtime ("" when the template names none) and Architectures
    #: (x86_64 when not given: https://docs.aws.amazon.com/lambda/latest/dg/API_CreateFunction.html)
    runtime: str = ""
    architectures: list[str] = field(default_factory=lambda: ["x86_64"])
    #: the uploads its asynchronous trigger delivers, by S3 API (every notification's joined; empty:
    #: every upload): `template_triggers.Trigger.delivered_by`
    delivered_by: list[str] = field(default_factory=list)
    #: the bucket its asynchronous trigger names encrypts with a KMS key by default: each upload's eTag is its
    #: own, no MD5 of its bytes (`template_triggers.encrypts_with_kms`)
    etags_not_md5: bool = False


def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def intrinsic(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        # their long forms have no Fn:: ({"Condition": "IsProd"}: https://docs.aws.amazon.com/AWSCloudFormation/
        # latest/TemplateReference/intrinsic-function-reference-condition.html)
        if suffix in ("Ref", "Condition"):
            return {suffix: value}
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
        return {f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", intrinsic)
    return Loader


def load(path: str) -> dict[str, Any]:
    """The template at `path`, a mapping of its sections; a TemplateError in one line saying what is
    wrong with the file and what to do (exit 2)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise TemplateError(f"--template {path}: cannot read it ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TemplateError(f"--template {path}: not UTF-8 text (byte {data[error.start]:#04x} at offset "
                            f"{error.start}): a template is YAML or JSON text; save it as UTF-8") from None
    sections = "a template is a mapping of sections such as Resources"
    if not text.strip():
        raise TemplateError(f"--template {path}: the file is empty: {sections}")
    try:
        if text.lstrip().startswith("{"):
            found = json.loads(text)
        else:
            import yaml

            found = yaml.load(text, Loader=_loader())  # noqa: S506 (a SafeLoader subclass)
    except json.JSONDecodeError as error:
        raise TemplateError(f"--template {path}: not JSON ({error.msg}, line {error.lineno}, column "
                            f"{error.colno}): fix it there") from None
    except ImportError as error:
        raise TemplateError(f"--template {path}: cannot read it ({error})") from None
    except Exception as error:  # yaml's own errors: its problem and where, not its drawing of the line
        mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
        said = " ".join(str(problem or error).split())
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise TemplateError(f"--template {path}: not YAML or JSON ({said}{where}): fix it there") from None
    if not isinstance(found, dict):
        raise TemplateError(f"--template {path}: holds a {type(found).__name__}, not a mapping: {sections}")
    return found


def _name(kind: str, logical_id: str, props: dict[str, Any]) -> str:
    given = props.get(NAMED_BY[kind])
    if isinstance(given, str):
        return given
    name = f"{STACK}-{logical_id}"
    if kind == "AWS::S3::Bucket":
        return name.lower()
    if kind == "AWS::SQS::Queue" and str(props.get("FifoQueue", "")).lower() == "true":
        return name + ".fifo"
    # "FIFO topic names must end with .fifo" (TopicName, FifoTopic:
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sns-topic.html)
    if kind == "AWS::SNS::Topic" and str(props.get("FifoTopic", "")).lower() == "true":
        return name + ".fifo"
    return name


def read(path: str, logical_id: str, parameters: dict[str, str] | None = None,
         source: str | None = None) -> TemplateFunction:
    """The function `logical_id` of the template at `path` (see the module), with the template's
    parameters given `parameters` (`template_parameters.values`); `source`: the handler's source
    (MODULE:FUNCTION or FILE.py:FUNCTION), where a build step fills the CodeUri, instead of its Handler."""
    from ...deploy.template import resolve

    raw = load(path)
    try:
        given = template_parameters.values(raw, parameters or {}, path)
    except template_parameters.ParameterError as error:
        raise TemplateError(str(error)) from None
    try:
        cfn = resolve(raw, given, pseudo=_Resolver.PSEUDO)
    except (KeyError, ValueError) as error:
        raise TemplateError(f"--template {path}: {error}") from None
    resources = cfn.get("Resources") or {}
    functions = [n for n, r in resources.items() if r.get("Type") in FUNCTIONS]
    if logical_id not in functions:
        raise TemplateError(f"--template {path} has no function {logical_id!r}; its functions: "
                            f"{', '.join(functions) or 'none'}")
    names: dict[str, str] = {}
    made: list[dict[str, Any]] = []
    early = _Resolver({}, {n: r["Type"] for n, r in resources.items()})  # a name made of pseudo parameters
    for rid, res in resources.items():
        if res.get("Type") in NAMED_BY:
            props = res.get("Properties") or {}
            names[rid] = _name(res["Type"], rid, {**props, NAMED_BY[res["Type"]]: early.value(
                props.get(NAMED_BY[res["Type"]]))} if NAMED_BY[res["Type"]] in props else props)
            made.append({"type": res["Type"], "id": rid, "name": names[rid], "properties": props})
    resolver = _Resolver(names, {n: r["Type"] for n, r in resources.items()})
    own = resources[logical_id].get("Properties") or {}
    # Globals reach SAM's own resource types only (P18)
    glob = ((cfn.get("Globals") or {}).get("Function") or {}) \
        if resources[logical_id].get("Type") == "AWS::Serverless::Function" else {}
    props = merge_globals(glob, own)
    env = (props.get("Environment") or {}).get("Variables") or {}
    env = {k: str(resolver.value(v)) for k, v in env.items()}
    target = source or ":".join(map(str, _handler_file(path, logical_id, props, resolver.value)))
    found = template_triggers.find(resources, logical_id, props, resolver.value, names)
    kinds = sorted({t.kind for t in found})
    if len(kinds) > 1:
        raise TemplateError(f"{logical_id} is fed by {', '.join(kinds)} "
                            f"({'; '.join(t.declared for t in found)}): the check takes one trigger at a "
                            "time: pick one with --trigger")
    uploads = next((t for t in found if t.kind != "sqs"), None)  # an asynchronous trigger: S3's or a rule's
    # two notifications for one function (one for PUT, one for POST) deliver what either does
    asynchronous = [t for t in found if t.kind != "sqs"]
    delivered = [] if any(not t.delivered_by for t in asynchronous) else \
        sorted({by for t in asynchronous for by in t.delivered_by})
    if asynchronous and delivered and "PutObject" not in delivered:
        what = "S3" if uploads.kind == "s3" else "its EventBridge rule"
        raise TemplateError(f"{logical_id}: {what} invokes it only for {uploads.events} ({uploads.declared}), never "
                            "for a PutObject, and the check uploads its orders by PutObject: check it with a "
                            "template whose trigger takes PutObject uploads too")
    sqs = next((t for t in found if t.kind == "sqs"), None)
    rule = next((t for t in found if t.kind == "eventbridge"), None)
    source_said = f"{Path(path).name}, function {logical_id}"
    try:
        settings = deployed.read(props, resources, logical_id, source_said,
                                 resolver.value, (sqs.queue, sqs.mapping) if sqs else None,
                                 rule.target if rule else None, rule.declared if rule else "",
                                 uploads.invokes if uploads else deployed.LATEST)
    except deployed.Unreadable as error:
        raise TemplateError(f"--template {source_said}: {error}") from None
    bucket = names.get(uploads.bucket, uploads.bucket) if uploads else ""
    settings = replace(settings, trigger=uploads.describe(bucket) if uploads else
                       "nothing in the template: S3 from the check's own bucket, every key" if not sqs else "")
    fan = template_triggers.fanout(resources, sqs.queue, resolver.value, names) if sqs else None
    if fan is not None:  # S3 -> SNS -> SQS: each body is SNS's envelope, unless delivered raw (P24)
        settings = replace(settings, sns_topic=names.get(fan.topic, fan.topic), raw_message_delivery=fan.raw,
                           trigger=fan.describe(names.get(fan.topic, fan.topic), names.get(fan.bucket, fan.bucket)))
    resolved = [{**r, "properties": resolver.value(r["properties"])} for r in made]
    kms = bool(uploads) and template_triggers.encrypts_with_kms(resolved, bucket)
    if kms:
        settings = replace(settings, trigger=f"{settings.trigger}; the bucket encrypts with a KMS key, so each "
                                             "upload's eTag is its own, no MD5 of its bytes")
    return TemplateFunction(logical_id, target, env, kinds[0] if kinds else "s3",
                            settings.memory_mb, settings.timeout, resolved, settings.as_dict(), found,
                            bucket, _layers(path, props, resources, resolver.value),
                            str(resolver.value(props.get("Runtime") or "")),
                            [str(a) for a in resolver.value(props.get("Architectures") or ["x86_64"])], delivered,
                            etags_not_md5=kms)


def merge_globals(glob: Any, own: Any) -> Any:
    """A SAM function's properties with `Globals.Function` merged in, as SAM merges them: a value of
    the function's own wins, maps merge key by key at every depth, lists join (Globals' first), and
    an intrinsic function is one value (the Globals section of the AWS SAM template:
    https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-specification-template-anatomy-globals.html).
    `Architectures` is the function's own: it runs on one (aws-sam-translator's REPLACE rule)."""
    def intrinsic(node: Any) -> bool:
        return isinstance(node, dict) and len(node) == 1 and next(iter(node)) in ("Ref", "Condition") \
            or isinstance(node, dict) and len(node) == 1 and str(next(iter(node))).startswith("Fn::")

    def merge(g: Any, o: Any, key: str) -> Any:
        if isinstance(g, dict) and isinstance(o, dict) and not intrinsic(g) and not intrinsic(o):
            return {**g, **{k: merge(g[k], v, k) if k in g else v for k, v in o.items()}}
        if isinstance(g, list) and isinstance(o, list) and key != "Architectures":
            return g + o
        return o

    return merge(glob, own, "")


def _layers(path: str, props: dict[str, Any], resources: dict[str, Any], value: Any) -> list[str]:
    """The function's Layers: a LayerVersion of the template as its folder, any other as its ARN."""
    found = []
    for layer in props.get("Layers") or []:
        rid = layer.get("Ref") if isinstance(layer, dict) else layer
        res = resources.get(rid) if isinstance(rid, str) else None
        if res and res.get("Type") in ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion"):
            lprops = res.get("Properties") or {}
            content = lprops.get("ContentUri", lprops.get("Content"))
            if isinstance(content, str) and "://" not in content:
                found.append(str(Path(path).resolve().parent / content))
                continue
        found.append(str(value(layer)))
    return found


def _handler_file(path: str, logical_id: str, props: dict[str, Any], value: Any) -> tuple[Path, str]:
    """The handler's file and function: `Handler` under `CodeUri`'s folder (SAM), `Code`'s folder
    (a local path, as `aws cloudformation package` takes it), or the template's; inline code
    (`InlineCode`, `Code.ZipFile`) written where CloudFormation writes it (`inline_code`)."""
    handler = str(props.get("Handler") or "")
    if "." not in handler:
        raise TemplateError(f"{logical_id} has no Handler of the form module.function")
    module, function = handler.rsplit(".", 1)
    code = props.get("CodeUri", props.get("Code"))
    inline = props.get("InlineCode") or (code.get("ZipFile") if isinstance(code, dict) else None)
    if inline is not None:
        folder = inline_code(str(value(inline)))
    elif isinstance(code, dict) and code.get("S3Bucket"):
        raise TemplateError(f"{logical_id}'s code is in S3 (Code.S3Bucket), which the check cannot read: give its "
                            "source as the target (FILE.py:FUNCTION, with --env for its settings), or point Code "
                            "or CodeUri at its folder")
    else:
        folder = Path(path).resolve().parent / (code if isinstance(code, str) and "://" not in code else "")
    file = folder / (module.replace(".", "/") + ".py")
    if not file.is_file():
        raise TemplateError(f"{logical_id}'s handler {handler} should be {file}, which does not exist"
                            + (" (inline code is written to index.py: its Handler is index.FUNCTION)"
                               if inline is not None else
                               ". If a build step fills its CodeUri (sam build, a BuildMethod), give the "
                               "handler's source as the target beside --template and --function "
                               "(FILE.py:FUNCTION or MODULE:FUNCTION): the template still gives its settings"))
    return file, function


def inline_code(source: str) -> Path:
    """The folder holding a function's inline code as `index.py`: CloudFormation "places it in a
    file named index and zips it to create a deployment package" (ZipFile,
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-lambda-function-code.html;
    SAM's InlineCode becomes that ZipFile). One folder per source, named by its hash, under the
    system's temporary folder; written once."""
    import hashlib
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"idem-inline-{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    folder.mkdir(exist_ok=True)
    index = folder / "index.py"
    if not index.is_file() or index.read_text(encoding="utf-8") != source:
        partial = folder / f"index.py.{__import__('os').getpid()}"
        partial.write_text(source, encoding="utf-8")
        partial.replace(index)
    return folder


class _Resolver:
    """Ref, Fn::GetAtt, Fn::Sub and Fn::Join, against the names the check gives the resources."""

    PSEUDO = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": STACK, "AWS::Partition": "aws",
              "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": ""}

    def __init__(self, names: dict[str, str], types: dict[str, str]) -> None:
        self.names, self.types = names, types

    def ref(self, rid: str) -> str:
        if rid in self.PSEUDO:
            return self.PSEUDO[rid]
        kind, name = self.types.get(rid, ""), self.names.get(rid, f"{STACK}-{rid}")
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        if kind == "AWS::SNS::Topic":
            return f"arn:aws:sns:{REGION}:{ACCOUNT}:{name}"
        if kind in STATE_MACHINES:
            return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        return name

    def attribute(self, rid: str, attr: str) -> str:
        kind, name = self.types.get(rid, ""), self.names.get(rid, f"{STACK}-{rid}")
        service = {"AWS::DynamoDB::Table": "dynamodb", "AWS::Serverless::SimpleTable": "dynamodb",
                   "AWS::SQS::Queue": "sqs", "AWS::SNS::Topic": "sns", "AWS::S3::Bucket": "s3",
                   "AWS::Events::EventBus": "events"}.get(kind, "")
        if attr in ("QueueName", "TopicName", "Name"):
            return name
        if self.types.get(rid, "") in STATE_MACHINES and attr == "Arn":
            return self.ref(rid)
        if attr in ("QueueUrl",):
            return self.ref(rid)
        if attr in ("Arn", "TopicArn"):
            if service == "s3":
                return f"arn:aws:s3:::{name}"
            if service == "dynamodb":
                return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
            if service == "events":
                return f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}"
            return f"arn:aws:{service or 'lambda'}:{REGION}:{ACCOUNT}:{name}"
        if attr == "StreamArn":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}/stream/1970-01-01T00:00:00.000"
        return name

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.value(n) for n in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.ref(str(arg))
            if fn == "Fn::GetAtt":
                rid, attr = (arg if isinstance(arg, list) else str(arg).split(".", 1))
                return self.attribute(str(rid), str(attr))
            if fn == "Fn::Join":
                sep, parts = arg
                return str(sep).join(str(self.value(p)) for p in self.value(parts))
            if fn == "Fn::Sub":
                text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.value(arg[1]))
                return re.sub(r"\$\{([^}!][^}]*)\}", lambda m: self._sub(m.group(1), extra), text)
        return {k: self.value(v) for k, v in node.items()}

    def _sub(self, name: str, extra: dict[str, Any]) -> str:
        if name in extra:
            return str(extra[name])
        if "." in name and not name.startswith("AWS::"):
            rid, attr = name.split(".", 1)
            return self.attribute(rid, attr)
        return self.ref(name)


def create(resources: list[dict[str, Any]], session: Any) -> list[str]:
    """Make the template's resources on the check's AWS (moto), with their names; says what it made."""
    made = []
    for r in resources:
        kind, name, props = r["type"], r["name"], r["properties"]
        if kind == "AWS::DynamoDB::Table":
            args: dict[str, Any] = {"TableName": name, "KeySchema": props["KeySchema"],
                                    "AttributeDefinitions": props["AttributeDefinitions"],
                                    "BillingMode": props.get("BillingMode", "PROVISIONED")}
            if args["BillingMode"] == "PROVISIONED":
                args["ProvisionedThroughput"] = props.get("ProvisionedThroughput") or {
                    "ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
            for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                if props.get(key):
                    args[key] = props[key]
            if (props.get("StreamSpecification") or {}).get("StreamViewType"):
                # CloudFormation's StreamSpecification names only the view type; the API also takes
                # StreamEnabled (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-dynamodb-table-streamspecification.html)
                args["StreamSpecification"] = {"StreamEnabled": True,
                                               "StreamViewType": props["StreamSpecification"]["StreamViewType"]}
            if args["BillingMode"] == "PAY_PER_REQUEST":
                for index in args.get("GlobalSecondaryIndexes", []):
                    index.pop("ProvisionedThroughput", None)
            session.client("dynamodb").create_table(**args)
            ttl = props.get("TimeToLiveSpecification") or {}
            if str(ttl.get("Enabled", "")).lower() == "true" and ttl.get("AttributeName"):
                # the table's TTL as deployed: DynamoDB deletes an item once the number of seconds in
                # AttributeName has passed ("typically within a few days"), and the check's sweeps do
                # (idem.sim.ttl_sweep) only where TTL is on
                # (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-dynamodb-table-timetolivespecification.html)
                session.client("dynamodb").update_time_to_live(
                    TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]})
        elif kind == "AWS::Serverless::SimpleTable":
            key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
            kind_of = {"String": "S", "Number": "N", "Binary": "B"}[key.get("Type", "String")]
            session.client("dynamodb").create_table(
                TableName=name, BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": key["Name"], "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": key["Name"], "AttributeType": kind_of}])
        elif kind == "AWS::SQS::Queue":
            attributes = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()
                          if k in ("FifoQueue", "ContentBasedDeduplication", "VisibilityTimeout",
                                   "MessageRetentionPeriod", "DelaySeconds")}
            session.client("sqs").create_queue(QueueName=name, Attributes=attributes)
        elif kind == "AWS::SNS::Topic":
            attributes = {k: str(v).lower() for k, v in props.items()
                          if k in ("FifoTopic", "ContentBasedDeduplication")}
            session.client("sns").create_topic(Name=name, Attributes=attributes)
        elif kind == "AWS::S3::Bucket":
            session.client("s3").create_bucket(Bucket=name)
        elif kind == "AWS::SES::EmailIdentity":
            session.client("ses").verify_email_identity(EmailAddress=name)
        elif kind == "AWS::Events::EventBus":
            session.client("events").create_event_bus(Name=name)
        elif kind in STATE_MACHINES:
            definition = props.get("DefinitionString") or props.get("Definition") or PASS_DEFINITION
            # STANDARD or EXPRESS, as deployed: only a standard workflow answers a StartExecution of a
            # running execution's name and input with that execution (SAM's Type, CloudFormation's
            # StateMachineType: https://docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html)
            flavour = str(props.get("StateMachineType") or props.get("Type") or "STANDARD").upper()
            session.client("stepfunctions").create_state_machine(
                name=name, roleArn=f"arn:aws:iam::{ACCOUNT}:role/{STACK}-states",
                definition=definition if isinstance(definition, str) else json.dumps(definition), type=flavour)
        made.append(f"{kind.split('::')[-1]} {name}")
    return made
