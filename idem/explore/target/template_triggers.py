"""What feeds a template's function: every form a template can declare it in.

On the function (SAM's `Events`): `S3`, `SQS`, `EventBridgeRule` / `CloudWatchEvent`. Outside it:
- an `AWS::Lambda::EventSourceMapping` whose `FunctionName` names it (its `EventSourceArn` an SQS
  queue of the template, by GetAtt or by an ARN that names it): sqs, with the mapping's `BatchSize`
  and `FunctionResponseTypes`;
- an `AWS::Events::Rule` with a target whose `Arn` names it: eventbridge (the function gets
  EventBridge's event, not S3's notification), with the target's `RetryPolicy` and `DeadLetterConfig`
  (SAM's `EventBridgeRule` event takes the same two properties);
- a bucket's `NotificationConfiguration.LambdaConfigurations` whose `Function` names it: s3, with
  the configuration's key filter.

A function "named" is its Ref, its GetAtt Arn, its alias or version, or a !Sub of them
(`deployed.names_function`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .deployed import LATEST, names, names_function, published_alias, referenced_id

#: SAM's event types, as the check's triggers.
SAM_EVENTS = {"S3": "s3", "SQS": "sqs", "EventBridgeRule": "eventbridge", "CloudWatchEvent": "eventbridge"}


@dataclass(frozen=True)
class Trigger:
    """One trigger of the function, as the template declares it."""

    kind: str  # s3, sqs or eventbridge
    declared: str  # where: "Events.Upload" or "AWS::Lambda::EventSourceMapping Mapping"
    bucket: str = ""  # s3: the bucket's logical id (or its literal name)
    prefix: str = ""  # s3: the key filter's prefix and suffix rules
    suffix: str = ""
    queue: str = ""  # sqs: the queue's logical id
    mapping: dict[str, Any] = field(default_factory=dict)  # sqs: the mapping's own properties
    #: eventbridge: the rule target's RetryPolicy and DeadLetterConfig, as declared (absent: EventBridge's defaults)
    target: dict[str, Any] = field(default_factory=dict)
    #: what it invokes: $LATEST (the function's plain ARN), or the alias it names (`deployed.invoke_config`)
    invokes: str = LATEST


def _filter(node: Any) -> tuple[str, str]:
    """(prefix, suffix) of an S3 key filter: {S3Key: {Rules: [{Name: prefix, Value: ...}]}}."""
    rules = (((node or {}).get("S3Key") or {}).get("Rules") or []) if isinstance(node, dict) else []
    found = {str(r.get("Name", "")).lower(): str(r.get("Value", "")) for r in rules if isinstance(r, dict)}
    return found.get("prefix", ""), found.get("suffix", "")


def _target(props: dict[str, Any]) -> dict[str, Any]:
    """A rule target's retry settings: its RetryPolicy and DeadLetterConfig, where declared."""
    return {k: props[k] for k in ("RetryPolicy", "DeadLetterConfig") if isinstance(props.get(k), dict)}


def find(resources: dict[str, Any], logical_id: str, props: dict[str, Any], value: Any,
         named: dict[str, str]) -> list[Trigger]:
    """Every trigger of the function `logical_id` (its merged properties `props`); `value` resolves an
    intrinsic and `named` holds the resources' names, to know a queue by its ARN."""
    found: list[Trigger] = []
    alias = published_alias(props, value)
    for name, event in (props.get("Events") or {}).items():  # SAM points them at the alias, when there is one
        kind = SAM_EVENTS.get(str(event.get("Type")))
        if kind is None:
            continue
        ep = event.get("Properties") or {}
        if kind == "s3":
            prefix, suffix = _filter(ep.get("Filter"))
            bucket = ep.get("Bucket")
            found.append(Trigger(kind, f"Events.{name}", referenced_id(bucket) or str(bucket or ""), prefix, suffix,
                                 invokes=alias))
        elif kind == "sqs":
            found.append(Trigger(kind, f"Events.{name}", queue=referenced_id(ep.get("Queue")), mapping=dict(ep)))
        else:
            found.append(Trigger(kind, f"Events.{name}", target=_target(ep), invokes=alias))
    for rid, res in resources.items():
        kind, rp = res.get("Type"), res.get("Properties") or {}
        if kind == "AWS::Lambda::EventSourceMapping" and names_function(rp.get("FunctionName"), logical_id):
            queue = referenced_id(rp.get("EventSourceArn")) or _queue_of(rp.get("EventSourceArn"), value, named)
            if (resources.get(queue) or {}).get("Type") == "AWS::SQS::Queue":
                found.append(Trigger("sqs", f"AWS::Lambda::EventSourceMapping {rid}", queue=queue, mapping=dict(rp)))
        elif kind == "AWS::Events::Rule":
            for target in rp.get("Targets") or []:
                if isinstance(target, dict) and names_function(target.get("Arn"), logical_id):
                    found.append(Trigger("eventbridge", f"AWS::Events::Rule {rid}", target=_target(target),
                                         invokes=_invokes(target.get("Arn"), logical_id, alias)))
                    break
        elif kind == "AWS::S3::Bucket":
            notifications = (rp.get("NotificationConfiguration") or {}).get("LambdaConfigurations") or []
            for n in notifications:
                if names_function(n.get("Function"), logical_id):
                    prefix, suffix = _filter(n.get("Filter"))
                    found.append(Trigger("s3", f"AWS::S3::Bucket {rid} NotificationConfiguration", rid,
                                         prefix, suffix, invokes=_invokes(n.get("Function"), logical_id, alias)))
    return found


def _queue_of(arn: Any, value: Any, named: dict[str, str]) -> str:
    """The logical id of the template's queue an ARN (a !Sub, say) names: arn:PARTITION:sqs:REGION:ACCOUNT:NAME."""
    parts = str(value(arn)).split(":") if arn is not None else []
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sqs":
        return ""
    return next((rid for rid, name in named.items() if name == parts[5]), "")


def _invokes(node: Any, logical_id: str, alias: str) -> str:
    """What a reference to the function invokes: its alias (`X.Alias`), else $LATEST (its Ref or Arn)."""
    return alias if names(node, f"{logical_id}.Alias") else LATEST
