"""What AWS makes when the stack deploys, a few resources at a time (chapter 09).

The listings are template.yaml's own text (`idem.deploy.template.section`), trimmed for a reader:
the linters' suppressions (`checkov:` and `cfn-lint:` blocks under `Metadata:`) stay in the
template, and a resource may be shown with only the properties a section talks about, the rest
named in one comment line. The alarms are read from the template as CloudFormation resolves it
for the production profile.
"""
from __future__ import annotations

import textwrap
from typing import Any

from ...deploy import template as tp

#: The Metadata blocks that only tell a linter which rule to skip, and why.
LINT_BLOCKS = ("checkov:", "cfn-lint:")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blocks(lines: list[str], start: int, indent: int) -> int:
    """The index after the block that starts at `start` (its deeper-indented lines and blanks)."""
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return end


def without_lint(text: str) -> str:
    """A resource's YAML without its linters' suppressions; a `Metadata:` left empty goes too."""
    lines, kept, n = text.splitlines(), [], 0
    while n < len(lines):
        line = lines[n]
        if line.strip() in LINT_BLOCKS:
            n = _blocks(lines, n, _indent(line))
            continue
        kept.append(line)
        n += 1
    out = []
    for n, line in enumerate(kept):
        if line.strip() == "Metadata:":
            rest = kept[n + 1:_blocks(kept, n, _indent(line))]
            if not any(r.strip() and not r.strip().startswith("#") for r in rest):
                continue
        out.append(line)
    return "\n".join(out)


def resource(logical_id: str, keep: tuple[str, ...] | None = None) -> str:
    """template.yaml's `logical_id`, without lint suppressions; with `keep`, only those
    properties (each with the comment above it), the others named in one closing comment."""
    text = without_lint(tp.section(logical_id))
    if keep is None:
        return text
    lines = text.splitlines()
    try:
        start = lines.index("  Properties:")
    except ValueError:
        return text
    head, body = lines[:start + 1], lines[start + 1:]
    entries: list[tuple[str, list[str]]] = []  # (property name, its lines with the comment above)
    pending: list[str] = []
    for line in body:
        if _indent(line) == 4 and line.strip().startswith("#"):
            pending.append(line)
        elif _indent(line) == 4 and line.strip():
            entries.append((line.strip().split(":")[0], pending + [line]))
            pending = []
        elif entries:
            entries[-1][1].append(line)
    shown = [line for name, block in entries if name in keep for line in block]
    left = [name for name, _ in entries if name not in keep]
    if left:
        shown.extend(textwrap.wrap(f"# ... and {len(left)} more in template.yaml: {', '.join(left)}", 96,
                                   initial_indent="    ", subsequent_indent="    #   "))
    return "\n".join(head + shown)


def resources(*logical_ids: str, keep: dict[str, tuple[str, ...]] | None = None) -> str:
    """Several resources, one after another, as `resource` shows each."""
    keep = keep or {}
    return "\n\n".join(resource(name, keep.get(name)) for name in logical_ids)


def lint_lines(logical_id: str) -> int:
    """How many lines of `logical_id` only tell a linter what to skip (left in the template)."""
    return len(tp.section(logical_id).splitlines()) - len(without_lint(tp.section(logical_id)).splitlines())


def alarm_rows(profile: str = "prod") -> list[dict[str, Any]]:
    """Every CloudWatch alarm the profile makes: its name, what it watches and when it fires."""
    cfn = tp.resolve(tp.load(), {"Profile": profile})
    rows = []
    for name, spec in cfn["Resources"].items():
        if spec.get("Type") != "AWS::CloudWatch::Alarm":
            continue
        props = spec.get("Properties", {})
        inner = [m.get("MetricStat", {}).get("Metric", {}).get("MetricName") for m in props.get("Metrics") or []]
        metric = props.get("MetricName") or ("math over " + ", ".join(sorted({i for i in inner if i})))
        if props.get("Namespace"):
            metric = f"{props['Namespace']} {metric}"
        op = {"GreaterThanThreshold": ">", "GreaterThanOrEqualToThreshold": ">=",
              "LessThanThreshold": "<", "LessThanOrEqualToThreshold": "<="}.get(
            str(props.get("ComparisonOperator")), str(props.get("ComparisonOperator")))
        rows.append({"alarm": name, "watches": metric, "fires when": f"{op} {props.get('Threshold', '')}".strip()})
    return rows
