"""Chapter 09: the order in which CloudFormation creates a stack's resources.

A resource waits for every resource it names in its properties or its metadata: a `Ref`, a
`Fn::GetAtt`, a `${Name}` inside a `Fn::Sub`, or its `DependsOn`. CloudFormation creates in parallel whatever waits for nothing
more, so a stack goes up in waves.
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html
"""
from __future__ import annotations

import re
import textwrap
from typing import Any

from ..answers import all_unfilled, not_yet, unfilled

#: The chapter's four groups, then what the tour left to other chapters.
GROUPS = ("function and trigger", "tables", "queues", "alarms", "reconciliation", "markers")


def _named(node: Any) -> set[str]:
    """Every logical id a piece of template names (parameters and pseudo parameters too)."""
    if isinstance(node, list):
        return set().union(*map(_named, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    if len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref" and isinstance(arg, str):
            return {arg}
        if fn == "Fn::GetAtt":
            return {arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0]}
        if fn == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            return {m.split(".", 1)[0] for m in re.findall(r"\$\{([^!}][^}]*)\}", text)} | _named(names)
    return set().union(*(_named(value) for value in node.values()))


def waits_for(cfn: dict[str, Any]) -> dict[str, set[str]]:
    """Each resource -> the resources it must wait for (a plain CloudFormation template)."""
    resources = cfn["Resources"]
    waits = {}
    for name, resource in resources.items():
        depends = resource.get("DependsOn", [])
        named = _named([resource.get("Properties", {}), resource.get("Metadata", {})]) | set([depends] if isinstance(depends, str) else depends)
        waits[name] = {other for other in named if other in resources and other != name}
    return waits


def waves(cfn: dict[str, Any]) -> list[list[str]]:
    """The resources in creation order: each wave waits only for the waves before it."""
    waits, done, order = waits_for(cfn), set(), []
    while len(done) < len(waits):
        ready = sorted(name for name, needs in waits.items() if name not in done and needs <= done)
        if not ready:
            raise ValueError(f"a circular dependency among {sorted(set(waits) - done)}")
        order.append(ready)
        done.update(ready)
    return order


def group(name: str, kind: str) -> str:
    """Which of the chapter's groups a resource belongs to."""
    if kind == "AWS::CloudFormation::WaitConditionHandle":
        return "markers"
    if name.startswith(("Reconcile", "Report")):
        return "reconciliation"
    if kind == "AWS::DynamoDB::Table":
        return "tables"
    if kind == "AWS::SQS::Queue":
        return "queues"
    if kind.startswith(("AWS::CloudWatch::", "AWS::SNS::")):
        return "alarms"
    return "function and trigger"


def wave_lines(cfn: dict[str, Any], shown: tuple[str, ...] = GROUPS[:4] + ("markers",)) -> list[str]:
    """One line per wave: its resources by group, in the chapter's order. A group of more than
    three is counted; the groups not shown are counted at the end of the line."""
    resources, lines = cfn["Resources"], []
    for number, wave in enumerate(waves(cfn), start=1):
        by_group = {g: [n for n in wave if group(n, resources[n]["Type"]) == g] for g in GROUPS}
        parts = [f"{g}: {', '.join(names) if len(names) <= 3 else f'{len(names)} of them'}"
                 for g, names in by_group.items() if names and g in shown]
        rest = sum(len(names) for g, names in by_group.items() if g not in shown)
        if rest:
            parts.append(f"and {rest} for the reconciliation")
        lines.append(f"wave {number}  " + "; ".join(parts))
    return lines


def without_depends_on(cfn: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """The same template with one resource's DependsOn taken away (chapter 09's exercise)."""
    resources = dict(cfn["Resources"])
    resources[logical_id] = {k: v for k, v in resources[logical_id].items() if k != "DependsOn"}
    return {**cfn, "Resources": resources}


def check_wave_prediction(my_wave: Any, my_permission_first: Any, cfn: dict[str, Any]) -> str:
    """Chapter 09's exercise: with UploadBucket's DependsOn taken away, the wave CloudFormation
    makes the bucket in, and whether the function's permission is sure to exist before it. A
    wrong answer gets a question that narrows, never the wave or the rule."""
    if all_unfilled([my_wave, my_permission_first]):
        return not_yet("set my_wave (a number, 1 for the first wave) and my_permission_first "
                       "(True or False)")
    wave = {name: n for n, names in enumerate(waves(cfn), start=1) for name in names}
    bucket, permission = wave["UploadBucket"], wave["ChargeFunctionUploadPermission"]
    first = permission < bucket
    lines = []
    if unfilled(my_wave):
        lines.append("my_wave: no prediction yet.")
    elif not isinstance(my_wave, int) or isinstance(my_wave, bool):
        lines.append(f"my_wave: {my_wave!r} is not a number; waves are counted 1, 2, 3, ...")
    elif my_wave == bucket:
        lines.append(f"my_wave: right, {bucket}.")
    elif my_wave < bucket:
        lines.append(f"my_wave: not {my_wave}, too early. The bucket's own properties still name a "
                     "resource: find it in the notification, and the wave it is made in.")
    else:
        lines.append(f"my_wave: not {my_wave}, too late. Without its DependsOn, the bucket waits "
                     "only for what its properties name.")
    if unfilled(my_permission_first):
        lines.append("my_permission_first: no prediction yet.")
    elif not isinstance(my_permission_first, bool):
        lines.append(f"my_permission_first: {my_permission_first!r} is not True or False.")
    elif my_permission_first == first:
        lines.append(f"my_permission_first: right, {first}.")
    else:
        lines.append(f"my_permission_first: not {my_permission_first}. CloudFormation orders two "
                     "resources only when one names the other. Does the bucket name the "
                     "permission, once its DependsOn is gone?")
    if all(line.split(": ", 1)[1].startswith("right") for line in lines):
        lines.append("Both right. Made side by side, S3 may test the function before the permission "
                     "exists, and the create fails. That is what the DependsOn prevents.")
    return "\n".join(textwrap.fill(line, 100, subsequent_indent="  ") for line in lines)
