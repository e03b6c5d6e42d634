"""template.yaml: load it, point it at an uploaded package, expand the SAM transform.

`translate()` runs aws-sam-translator in-process, as CloudFormation's transform would
on AWS, with an empty managed-policy map (the template uses none) and no network.
The helpers below read the expanded template back, for the moto target and the tests.
"""
from __future__ import annotations

import copy
import functools
import json
import logging
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
FUNCTION = "ChargeFunction"  # the function's logical id in template.yaml
RECONCILER = "ReconcileFunction"  # the scheduled reconciliation's logical id


def load(path: Path = TEMPLATE) -> dict[str, Any]:
    """The SAM template as a dict (short-form intrinsics such as !Sub become Fn::Sub)."""
    from samtranslator.yaml_helper import yaml_parse

    try:
        return yaml_parse(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found: run from a clone of the workbook") from None


def with_code(template: dict[str, Any], bucket: str, key: str) -> dict[str, Any]:
    """What `sam package` does: each function's CodeUri becomes the uploaded zip (both
    functions run from the same package, idem's core)."""
    packaged = copy.deepcopy(template)
    for resource in packaged["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://{bucket}/{key}"
    return packaged


def translate(template: dict[str, Any], parameters: dict[str, str] | None = None,
              region: str = "us-east-1") -> dict[str, Any]:
    """Expand the SAM transform locally: plain CloudFormation out."""
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    translator = Translator({}, Parser(), boto_session=_region_only(region))
    # With no feature-toggle config (CloudFormation has its own), the translator logs a warning
    # for each feature it asks about; the answer, off, is the same either way.
    toggles = logging.getLogger("samtranslator.feature_toggle.feature_toggle")
    level = toggles.level
    toggles.setLevel(logging.ERROR)
    try:
        expanded = translator.translate(copy.deepcopy(template), parameter_values=dict(parameters or {}),
                                        get_managed_policy_map=dict)
    finally:
        toggles.setLevel(level)
    # The translator counts metrics for a publisher that, here, sends nothing; unpublished,
    # they make it log a warning whenever the object happens to be garbage-collected.
    translator.metrics.publish()
    return expanded


@functools.cache
def _region_only(region: str) -> Any:
    """A session that only tells the translator which region (and partition) to assume;
    one per region, as a session is slow to make."""
    import boto3

    return boto3.Session(aws_access_key_id="none", aws_secret_access_key="none",
                         region_name=region)


def resources_of_type(cfn: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in cfn["Resources"].items() if res["Type"] == kind}


def one(cfn: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
    """The single resource of a type: (logical id, resource)."""
    found = resources_of_type(cfn, kind)
    if len(found) != 1:
        raise ValueError(f"expected one {kind} in the template, found {len(found)}")
    return next(iter(found.items()))


#: The resources a prod stack keeps when deleted are named from the stack name, and the
#: template names them by that name (a !Sub of their name, ARN or URL), not by Ref or GetAtt,
#: so that a stack adopting them (AdoptRetained=yes) works the same. Name endings -> logical id.
RETAINED_NAMES = (
    (r"table/\$\{AWS::StackName\}-ledger(/.*)?$|^\$\{AWS::StackName\}-ledger$", "LedgerTable"),
    (r"\$\{AWS::StackName\}-charge-failures$", "FailureQueue"),
    (r"\$\{AWS::StackName\}-reconcile-failures$", "ReconcileFailureQueue"),
    (r"\$\{AWS::StackName\}-uploads$", "UploadQueue"),
    (r"\$\{AWS::StackName\}-uploads-\$\{AWS::AccountId\}-\$\{AWS::Region\}(/.*)?$", "UploadBucket"),
    (r"\$\{AWS::StackName\}-reports-\$\{AWS::AccountId\}-\$\{AWS::Region\}(/.*)?$", "ReportBucket"),
    (r"/aws/lambda/\$\{AWS::StackName\}-charge(:\*)?$", "ChargeFunctionLogs"),
    (r"/aws/lambda/\$\{AWS::StackName\}-reconcile(:\*)?$", "ReconcileFunctionLogs"),
)


def named(value: Any) -> tuple[str, str]:
    """(logical id, what follows its name) for a !Sub naming a retained resource, or ('', '')."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        for pattern, logical in RETAINED_NAMES:
            found = re.search(pattern, text)
            if found:
                rest = next((g for g in found.groups() if g), "") if found.groups() else ""
                return logical, rest if rest.startswith("/") else ""
    return "", ""


def ref_name(value: Any) -> str:
    """The logical id behind a Ref, a Fn::GetAtt or a !Sub of a retained resource's name
    (or '' for a literal)."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return target[0] if isinstance(target, list) else target.split(".")[0]
        return named(value)[0]
    return ""


def granted(cfn: dict[str, Any]) -> set[tuple[str, str]]:
    """(action, logical id of the resource) pairs the function's role allows."""
    role_id = ref_name(cfn["Resources"][FUNCTION]["Properties"]["Role"])
    role = cfn["Resources"][role_id]["Properties"]
    if role.get("ManagedPolicyArns"):
        raise ValueError(f"{role_id} has managed policies; their grants cannot be checked here")
    pairs = set()
    for policy in role.get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            if statement["Effect"] != "Allow":
                continue
            actions = statement["Action"]
            resources = statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for resource in [resources] if not isinstance(resources, list) else resources:
                    logical, rest = named(resource)
                    pairs.add((action, (logical + rest) if logical else (ref_name(resource) or str(resource))))
    return pairs


def resource_label(value: Any) -> str:
    """A readable name for a policy statement's Resource: `LedgerTable` for its !GetAtt Arn,
    `LedgerTable/index/by_account` for `!Sub ${LedgerTable.Arn}/index/by_account`,
    `parameter:StripeSecretParameter` for an SSM parameter ARN, `*` for itself."""
    logical, rest = named(value)
    if logical:
        return logical + rest
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        if ":parameter${" in text:
            return "parameter:" + text.split(":parameter${", 1)[1].rstrip("}")
        if text.startswith("arn:${AWS::Partition}:s3:::${AWS::StackName}-uploads-"):
            return "UploadBucket/" + text.rsplit("/", 1)[1]
        return re.sub(r"\$\{(\w+)\.Arn\}", r"\1", text)
    return ref_name(value) or str(value)


def role_grants(cfn: dict[str, Any], role_id: str) -> set[tuple[str, str]]:
    """(action, resource label) pairs a role's inline policies allow."""
    pairs = set()
    for policy in cfn["Resources"][role_id]["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            if statement["Effect"] != "Allow":
                continue
            actions, resources = statement["Action"], statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for resource in resources if isinstance(resources, list) else [resources]:
                    pairs.add((action, resource_label(resource)))
    return pairs


def section(logical_id: str, path: Path = TEMPLATE) -> str:
    """One resource's YAML exactly as template.yaml has it, with the comment above it."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(f"  {logical_id}:")
    except ValueError:
        raise KeyError(f"{logical_id} is not a top-level entry of {Path(path).name}") from None
    while start > 0 and lines[start - 1].startswith("  #"):
        start -= 1
    end = lines.index(f"  {logical_id}:", start) + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return "\n".join(line[2:] for line in lines[start:end]).rstrip()


# -- the profiles: template.yaml's conditions, resolved as CloudFormation resolves them ----
#: The parameter that picks the profile, and its values (template.yaml's header).
PROFILE = "Profile"
PROFILES = ("prod", "demo")
_NO_VALUE = {"Ref": "AWS::NoValue"}


def parameter_values(cfn: dict[str, Any], given: dict[str, str] | None = None) -> dict[str, Any]:
    """Every parameter's value: the given one, else its Default; Number parameters as int."""
    values: dict[str, Any] = {}
    for name, spec in (cfn.get("Parameters") or {}).items():
        raw = (given or {}).get(name, spec.get("Default"))
        if raw is None:
            raise ValueError(f"parameter {name} has no default: give it a value")
        values[name] = int(raw) if spec.get("Type") == "Number" else str(raw)
    unknown = set(given or {}) - set(values)
    if unknown:
        raise ValueError(f"template.yaml has no parameter {', '.join(sorted(unknown))}")
    return values


def find_in_map(cfn: dict[str, Any], args: list[Any]) -> Any:
    """Fn::FindInMap [MapName, TopLevelKey, SecondLevelKey], its keys already resolved: the entry of the
    template's Mappings (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-findinmap.html).
    A key still an intrinsic leaves the function as it is; a missing entry is a ValueError naming it."""
    if not isinstance(args, list) or len(args) != 3 or not all(isinstance(a, (str, int)) for a in args):
        return {"Fn::FindInMap": args}
    found: Any = cfn.get("Mappings") or {}
    for key in map(str, args):
        if not isinstance(found, dict) or key not in found:
            raise ValueError(f"Fn::FindInMap {[str(a) for a in args]}: the template's Mappings have no such entry")
        found = found[key]
    return found


def conditions(cfn: dict[str, Any], values: dict[str, Any], pseudo: dict[str, str] | None = None) -> dict[str, bool]:
    """Each condition of the template, true or false for these parameter values (and `pseudo`
    parameters' values, such as AWS::Region, where the caller knows them: a condition may use them,
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/conditions-section-structure.html)."""
    defined = cfn.get("Conditions") or {}
    done: dict[str, bool] = {}
    known = {**(pseudo or {}), **values}

    def value(node: Any) -> Any:
        if isinstance(node, dict) and len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return known[arg] if arg in known else node
            if fn == "Fn::FindInMap":
                return find_in_map(cfn, [value(a) for a in arg])
            if fn == "Condition":
                return truth(arg)
            if fn == "Fn::Equals":
                return str(value(arg[0])) == str(value(arg[1]))
            if fn == "Fn::Not":
                return not value(arg[0])
            if fn == "Fn::And":
                return all(value(a) for a in arg)
            if fn == "Fn::Or":
                return any(value(a) for a in arg)
            raise ValueError(f"{fn} is not a condition function this resolver knows")
        return node

    def truth(name: str) -> bool:
        if name not in done:
            done[name] = bool(value(defined[name]))
        return done[name]

    return {name: truth(name) for name in defined}


def resolve(cfn: dict[str, Any], given: dict[str, str] | None = None,
            pseudo: dict[str, str] | None = None) -> dict[str, Any]:
    """The template as CloudFormation would create it with these parameters: conditions
    evaluated, resources and outputs of a false condition gone, Fn::If and AWS::NoValue
    resolved (in DeletionPolicy too, as AWS::LanguageExtensions allows), Refs to parameters
    replaced by their values, and Fn::FindInMap read. `pseudo`: the pseudo parameters' values,
    for conditions and mapping keys (without it they are left); !Sub and !GetAtt are left."""
    values = parameter_values(cfn, given)
    truth = conditions(cfn, values, pseudo)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if len(node) == 1 and "Fn::If" in node:
                name, yes, no = node["Fn::If"]
                return walk(yes if truth[name] else no)
            if len(node) == 1 and "Ref" in node and node["Ref"] in values:
                return values[node["Ref"]]
            if len(node) == 1 and "Ref" in node and node["Ref"] in (pseudo or {}) and node["Ref"] != "AWS::NoValue":
                return (pseudo or {})[node["Ref"]]
            if len(node) == 1 and "Fn::FindInMap" in node:
                return walk(find_in_map(cfn, walk(node["Fn::FindInMap"])))
            out = {}
            for key, item in node.items():
                item = walk(item)
                if item != _NO_VALUE:
                    out[key] = item
            return out
        if isinstance(node, list):
            return [walk(item) for item in node if walk(item) != _NO_VALUE]
        return node

    out = {key: value for key, value in cfn.items() if key not in ("Conditions", "Transform")}
    for section in ("Resources", "Outputs", *(("Globals",) if "Globals" in cfn else ())):  # SAM's Globals too
        kept = {name: entry for name, entry in (cfn.get(section) or {}).items()
                if truth.get(entry.get("Condition", ""), True)}
        out[section] = {name: {k: v for k, v in walk(entry).items() if k != "Condition"}
                        for name, entry in kept.items()}
    for resource in out["Resources"].values():  # a function's environment holds strings only
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
        for name, item in variables.items():
            if isinstance(item, int):
                variables[name] = str(item)
    return out


def rule_failures(cfn: dict[str, Any], given: dict[str, str] | None = None) -> list[str]:
    """What CloudFormation's Rules section refuses for these parameters: each failed
    assertion's AssertDescription (CloudFormation checks them before creating anything)."""
    values = parameter_values(cfn, given)
    failures = []
    for rule in (cfn.get("Rules") or {}).values():
        scratch = {"Conditions": {"when": rule.get("RuleCondition", True),
                                  **{f"a{n}": a["Assert"] for n, a in enumerate(rule["Assertions"])}}}
        truth = conditions(scratch, values)
        if not truth["when"]:
            continue
        failures += [" ".join(a["AssertDescription"].split())
                     for n, a in enumerate(rule["Assertions"]) if not truth[f"a{n}"]]
    return failures


#: What moto's CloudFormation cannot make: a Lambda alias (it warns and skips it, and a Ref to it
#: comes back empty: "Missing FunctionName"), CodeDeploy's application and deployment group, and a
#: function URL (the webhook's: its output is dropped with it).
MOTO_UNMADE = ("AWS::Lambda::Alias", "AWS::CodeDeploy::Application", "AWS::CodeDeploy::DeploymentGroup",
               "AWS::Lambda::Url")


def for_moto(cfn: dict[str, Any]) -> dict[str, Any]:
    """The resolved template as moto can make it (a gap, filled here and named): each reference to
    the function's alias names the function itself (on a first deploy the alias would point at the
    one version there is: the same code), and the alias and CodeDeploy's resources are dropped
    (their role too). Real AWS gets the template unchanged; tests/test_canary.py checks it."""
    aliases = {name: res["Properties"]["FunctionName"] for name, res in cfn["Resources"].items()
               if res["Type"] == "AWS::Lambda::Alias"}
    dropped = {name for name, res in cfn["Resources"].items() if res["Type"] in MOTO_UNMADE}
    dropped |= {name for name, res in cfn["Resources"].items() if name == "CodeDeployServiceRole"}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Ref"} and node["Ref"] in aliases:
                return copy.deepcopy(aliases[node["Ref"]])
            return {k: walk(v) for k, v in node.items() if not (k == "UpdatePolicy" and "CodeDeployLambdaAliasUpdate" in v)}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    made = walk({k: v for k, v in cfn.items() if k != "Resources"})
    made["Outputs"] = {name: out for name, out in made.get("Outputs", {}).items()
                       if not dropped & set(re.findall(r"[A-Za-z0-9]+", json.dumps(out.get("Value"))))}
    made["Resources"] = {name: walk(res) for name, res in cfn["Resources"].items() if name not in dropped}
    return made


def as_moto_makes_it(template: dict[str, Any], parameters: dict[str, str], region: str) -> dict[str, Any]:
    """`template` as CloudFormation expands it on AWS (the transforms, then the profile's conditions),
    then as moto can make it (`for_moto`): what both moto deploys send, moto's CloudFormation knowing
    neither transform nor alias."""
    return for_moto(resolve(translate(template, parameters, region), parameters))
