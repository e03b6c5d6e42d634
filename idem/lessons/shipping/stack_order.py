"""Chapter 09: the order in which CloudFormation creates a stack's resources.

A resource waits for every resource it names in its properties or its metadata: a `Ref`, a
`Fn::GetAtt`, a `${Name}` inside a `Fn::Sub`, or its `DependsOn`. CloudFormation creates in parallel whatever waits for nothing
more, so a stack goes up in waves.
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html
"""
from __future__ import annotations

import re
from typing import Any

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
