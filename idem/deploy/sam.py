"""Stacks made from template.yaml with the SAM CLI: recognized safely, so the tool may clean them.

The tool tags every stack it creates and touches no other. `sam deploy` adds no such tag,
so a stack it made is touched only when the reader asks with --sam, and only when the
stack proves it was made from this template:

1. its template as submitted (GetTemplate, stage Original) carries template.yaml's
   top-level Metadata mark, `idem:workbook: the-ledger-that-charged-twice`;
2. every resource it has is one template.yaml makes, with the same logical id and type,
   and it has the ones that hold data (the bucket, both tables, the queue, the function).

A stack failing either is refused with the reason, and nothing of it is touched.
"""
from __future__ import annotations

import json
import re
from typing import Any

from . import template as tp
from .errors import DeployError

MARK_KEY = "idem:workbook"
#: Resources whose presence, with these ids and types, identifies the workbook's stack (in either
#: profile: the stand-in provider's table is the demo's only).
CORE_RESOURCES = ("UploadBucket", "LedgerTable", "FailureQueue", tp.FUNCTION)


def mark() -> str:
    """The value template.yaml's Metadata gives MARK_KEY."""
    return tp.load()["Metadata"][MARK_KEY]


def expected_resources(region: str) -> dict[str, str]:
    """Logical id -> resource type, for template.yaml after the SAM transform."""
    expanded = tp.translate(tp.with_code(tp.load(), "code-bucket", "code.zip"), region=region)
    return {logical: resource["Type"] for logical, resource in expanded["Resources"].items()}


def submitted_template(client: Any, stack: str) -> dict[str, Any]:
    """The stack's template as it was sent: a dict from JSON, or parsed from YAML."""
    body = client.get_template(StackName=stack, TemplateStage="Original")["TemplateBody"]
    if isinstance(body, dict):
        return body
    try:
        return json.loads(body)
    except ValueError:
        from samtranslator.yaml_helper import yaml_parse  # `sam deploy` sends YAML

        return yaml_parse(body)


def stack_resources(client: Any, stack: str) -> dict[str, str]:
    """Logical id -> type of what the stack holds (moto lists an unsupported one blank)."""
    found: dict[str, str] = {}
    for page in client.get_paginator("list_stack_resources").paginate(StackName=stack):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId"):
                found[summary["LogicalResourceId"]] = summary.get("ResourceType", "")
    return found


def _unversioned(logical: str) -> str:
    """AutoPublishAlias's version: SAM names it from a hash of the code (ChargeFunctionVersion<10 hex>),
    which differs from one build to the next; it is one resource whatever the hash."""
    return re.sub(r"Version[0-9a-f]{10}$", "Version", logical)


def why_not(client: Any, stack: str, region: str) -> str | None:
    """None if the stack is recognizably made from template.yaml; else the reason it is not."""
    metadata = submitted_template(client, stack).get("Metadata") or {}
    if metadata.get(MARK_KEY) != mark():
        return (f"its template has no `Metadata: {MARK_KEY}: {mark()}` mark, so it was not "
                "made from this workbook's template.yaml (or from a version before the mark)")
    wanted = {_unversioned(k): v for k, v in expected_resources(region).items()}
    have = {_unversioned(k): v for k, v in stack_resources(client, stack).items()}
    foreign = sorted(f"{logical} ({kind})" for logical, kind in have.items()
                     if wanted.get(logical) != kind)
    if foreign:
        return f"it holds resources template.yaml does not make: {', '.join(foreign)}"
    missing = [logical for logical in CORE_RESOURCES if logical not in have]
    if missing:
        return f"it lacks resources template.yaml makes: {', '.join(missing)}"
    return None


def check(client: Any, stack: str, region: str) -> None:
    """Raise DeployError unless the stack is recognizably made from template.yaml."""
    reason = why_not(client, stack, region)
    if reason:
        raise DeployError(f"stack {stack!r} is not tagged by this tool, and --sam cannot vouch "
                          f"for it: {reason}. Nothing was touched")
