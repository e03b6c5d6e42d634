"""What feeds a template's function: every form a template can declare it in.

On the function (SAM's `Events`): `S3`, `SQS`, `EventBridgeRule` / `CloudWatchEvent`. Outside it:
- an `AWS::Lambda::EventSourceMapping` whose `FunctionName` names it (its `EventSourceArn` an SQS
  queue of the template, by GetAtt or by an ARN that names it): sqs, with the mapping's `BatchSize`
  and `FunctionResponseTypes`;
- an `AWS::Events::Rule` with a target whose `Arn` names it: eventbridge (the function gets
  EventBridge's event, not S3's notification), with the target's `RetryPolicy` and `DeadLetterConfig`
  (SAM's `EventBridgeRule` event takes the same two properties);
- a bucket's `NotificationConfiguration.LambdaConfigurations` whose `Function` names it: s3, with
  the configuration's key filter and event type;
- the S3 API's own notification shape, as a custom resource writes it (CDK's
  `Custom::S3BucketNotifications`: `NotificationConfiguration.LambdaFunctionConfigurations`, each with
  `LambdaFunctionArn`, `Events` and `Filter.Key.FilterRules`, the bucket in `BucketName`).

An EventBridge rule's pattern (SAM's `Pattern`, a rule's `EventPattern`) gives the bucket
(`detail.bucket.name`), the key filter (`detail.object.key`, a prefix or a suffix) and the uploads it
matches (`detail.reason`). Which uploads a trigger delivers is `delivered_by` (S3's APIs, as
`idem.sim.s3_uploads.UPLOAD_EVENTS` names them; empty: every upload): S3 invokes a function only for the
event types it is subscribed to
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html).

A function "named" is its Ref, its GetAtt Arn, its alias or version, a !Sub of them, or its
FunctionName written out (`deployed.names_function`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...sim.s3_uploads import UPLOAD_EVENTS
from .deployed import LATEST, function_name, names, names_function, published_alias, referenced_id

#: SAM's event types, as the check's triggers.
SAM_EVENTS = {"S3": "s3", "SQS": "sqs", "EventBridgeRule": "eventbridge", "CloudWatchEvent": "eventbridge"}
#: The S3 event type of each upload API (UPLOAD_EVENTS, with S3's `s3:` prefix), and EventBridge's
#: `detail.reason` is the API's own name (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html).
UPLOAD_TYPES = {api: "s3:" + event for api, event in UPLOAD_EVENTS.items()}


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
    #: s3 and eventbridge: the uploads it delivers, by S3 API (UPLOAD_TYPES' keys); empty: every upload
    delivered_by: tuple[str, ...] = ()
    #: as declared: S3's event types, or the rule's detail.reason values ("" for none named)
    events: str = ""
    #: what of the rule's pattern the check could not read (it delivers as if it were not there)
    unread: str = ""

    def describe(self, bucket_name: str) -> str:
        """The report's account of it: where, its bucket, key filter and event types."""
        said = [{"s3": "S3", "sqs": "SQS", "eventbridge": "EventBridge"}[self.kind], self.declared]
        if bucket_name:
            said.append(f"bucket {bucket_name}")
        keys = " and ".join(f"{what} {value!r}" for what, value in (("beginning", self.prefix), ("ending", self.suffix))
                            if value)
        if self.kind != "sqs":
            said.append(f"keys {keys}" if keys else "every key")
            said.append(f"for {self.events} only" if self.delivered_by else "every upload")
        if self.unread:
            said.append(self.unread)
        return ", ".join(said)


def _filter(node: Any, key: str = "S3Key", rules: str = "Rules") -> tuple[str, str]:
    """(prefix, suffix) of an S3 key filter: CloudFormation's {S3Key: {Rules: [{Name: prefix, Value: ...}]}},
    or the S3 API's {Key: {FilterRules: [...]}} (`_filter_rules`)."""
    found_rules = (((node or {}).get(key) or {}).get(rules) or []) if isinstance(node, dict) else []
    found = {str(r.get("Name", "")).lower(): str(r.get("Value", "")) for r in found_rules if isinstance(r, dict)}
    return found.get("prefix", ""), found.get("suffix", "")


def _filter_rules(node: Any) -> tuple[str, str]:
    """(prefix, suffix) of the S3 API's key filter: {Key: {FilterRules: [{Name: prefix, Value: ...}]}}."""
    return _filter(node, "Key", "FilterRules")


def _delivered_by(types: Any) -> tuple[tuple[str, ...], str]:
    """(the upload APIs S3 event types deliver, empty for every upload; the types as declared)."""
    declared = [str(types)] if isinstance(types, str) else [str(x) for x in types or []]
    if not declared:
        return (), ""
    by = tuple(api for api, kind in UPLOAD_TYPES.items()
               if any(d in (kind, "s3:ObjectCreated:*", "s3:*") for d in declared))
    return (() if len(by) == len(UPLOAD_TYPES) else by), ", ".join(declared)


def _pattern(node: Any, value: Any) -> tuple[str, str, str, tuple[str, ...], str, str]:
    """What an EventBridge pattern says of S3's Object Created events: (bucket name, key prefix, key
    suffix, the upload APIs its detail.reason matches (empty: every one), the reasons as declared,
    what of it was not read)."""
    pattern = value(node)
    if isinstance(pattern, str):
        try:
            pattern = json.loads(pattern)
        except ValueError:
            pattern = {}
    detail = pattern.get("detail") if isinstance(pattern, dict) else None
    detail = detail if isinstance(detail, dict) else {}
    unread: list[str] = []
    names = ((detail.get("bucket") or {}).get("name") if isinstance(detail.get("bucket"), dict) else None) or []
    bucket = str(names[0]) if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str) else ""
    prefix = suffix = ""
    keys = ((detail.get("object") or {}).get("key") if isinstance(detail.get("object"), dict) else None) or []
    if keys:
        if isinstance(keys, list) and len(keys) == 1 and isinstance(keys[0], dict) and set(keys[0]) <= {"prefix", "suffix"} \
                and all(isinstance(v, str) for v in keys[0].values()):
            prefix, suffix = str(keys[0].get("prefix", "")), str(keys[0].get("suffix", ""))
        else:
            unread.append(f"its pattern on detail.object.key ({json.dumps(keys)}) not read: every key delivered")
    reasons = detail.get("reason") or []
    by: tuple[str, ...] = ()
    if reasons:
        if isinstance(reasons, list) and all(isinstance(r, str) for r in reasons):
            by = tuple(api for api in UPLOAD_TYPES if api in reasons)
            by = () if len(by) == len(UPLOAD_TYPES) else by
        else:
            unread.append(f"its pattern on detail.reason ({json.dumps(reasons)}) not read: every upload delivered")
            reasons = []
    return bucket, prefix, suffix, by, ", ".join(map(str, reasons)), "; ".join(unread)


def _target(props: dict[str, Any]) -> dict[str, Any]:
    """A rule target's retry settings: its RetryPolicy and DeadLetterConfig, where declared."""
    return {k: props[k] for k in ("RetryPolicy", "DeadLetterConfig") if isinstance(props.get(k), dict)}


def find(resources: dict[str, Any], logical_id: str, props: dict[str, Any], value: Any,
         named: dict[str, str]) -> list[Trigger]:
    """Every trigger of the function `logical_id` (its merged properties `props`); `value` resolves an
    intrinsic and `named` holds the resources' names, to know a queue by its ARN."""
    found: list[Trigger] = []
    alias = published_alias(props, value)
    own = function_name(props, value)

    def names_it(node: Any) -> bool:
        return names_function(node, logical_id, own, value)

    for name, event in (props.get("Events") or {}).items():  # SAM points them at the alias, when there is one
        kind = SAM_EVENTS.get(str(event.get("Type")))
        if kind is None:
            continue
        ep = event.get("Properties") or {}
        if kind == "s3":
            prefix, suffix = _filter(ep.get("Filter"))
            bucket = ep.get("Bucket")
            by, events = _delivered_by(ep.get("Events"))
            found.append(Trigger(kind, f"Events.{name}", referenced_id(bucket) or str(bucket or ""), prefix, suffix,
                                 invokes=alias, delivered_by=by, events=events))
        elif kind == "sqs":
            found.append(Trigger(kind, f"Events.{name}", queue=referenced_id(ep.get("Queue")), mapping=dict(ep)))
        else:
            found.append(_rule(f"Events.{name}", ep.get("Pattern"), value, named, target=_target(ep), invokes=alias))
    for rid, res in resources.items():
        kind, rp = res.get("Type"), res.get("Properties") or {}
        if kind == "AWS::Lambda::EventSourceMapping" and names_it(rp.get("FunctionName")):
            queue = referenced_id(rp.get("EventSourceArn")) or _queue_of(rp.get("EventSourceArn"), value, named)
            if (resources.get(queue) or {}).get("Type") == "AWS::SQS::Queue":
                found.append(Trigger("sqs", f"AWS::Lambda::EventSourceMapping {rid}", queue=queue, mapping=dict(rp)))
        elif kind == "AWS::Events::Rule":
            for target in rp.get("Targets") or []:
                if isinstance(target, dict) and names_it(target.get("Arn")):
                    found.append(_rule(f"AWS::Events::Rule {rid}", rp.get("EventPattern"), value, named,
                                       target=_target(target), invokes=_invokes(target.get("Arn"), logical_id, alias)))
                    break
        elif kind == "AWS::S3::Bucket":
            notifications = (rp.get("NotificationConfiguration") or {}).get("LambdaConfigurations") or []
            for n in notifications:
                if names_it(n.get("Function")):
                    prefix, suffix = _filter(n.get("Filter"))
                    by, events = _delivered_by(n.get("Event"))
                    found.append(Trigger("s3", f"AWS::S3::Bucket {rid} NotificationConfiguration", rid,
                                         prefix, suffix, invokes=_invokes(n.get("Function"), logical_id, alias),
                                         delivered_by=by, events=events))
        elif isinstance(rp.get("NotificationConfiguration"), dict):  # the S3 API's shape: CDK's custom resource
            bucket = rp.get("BucketName", rp.get("Bucket"))
            for n in rp["NotificationConfiguration"].get("LambdaFunctionConfigurations") or []:
                if isinstance(n, dict) and names_it(n.get("LambdaFunctionArn")):
                    prefix, suffix = _filter_rules(n.get("Filter"))
                    by, events = _delivered_by(n.get("Events"))
                    found.append(Trigger("s3", f"{kind} {rid}", referenced_id(bucket) or str(value(bucket) or ""),
                                         prefix, suffix, invokes=_invokes(n.get("LambdaFunctionArn"), logical_id, alias),
                                         delivered_by=by, events=events))
    return found


def _rule(declared: str, pattern: Any, value: Any, named: dict[str, str], **given: Any) -> Trigger:
    """An EventBridge rule's trigger, with what its pattern says of the bucket, keys and uploads."""
    bucket, prefix, suffix, by, reasons, unread = _pattern(pattern, value)
    bucket_id = next((rid for rid, name in named.items() if name == bucket), bucket)
    return Trigger("eventbridge", declared, bucket_id, prefix, suffix, delivered_by=by,
                   events=f"detail.reason {reasons}" if reasons else "", unread=unread, **given)


def _queue_of(arn: Any, value: Any, named: dict[str, str]) -> str:
    """The logical id of the template's queue an ARN (a !Sub, say) names: arn:PARTITION:sqs:REGION:ACCOUNT:NAME."""
    parts = str(value(arn)).split(":") if arn is not None else []
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sqs":
        return ""
    return next((rid for rid, name in named.items() if name == parts[5]), "")


def _invokes(node: Any, logical_id: str, alias: str) -> str:
    """What a reference to the function invokes: its alias (`X.Alias`), else $LATEST (its Ref or Arn)."""
    return alias if names(node, f"{logical_id}.Alias") else LATEST


#: the default encryptions under which a PutObject's eTag is no MD5 of the object's bytes
#: (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html: SSE-KMS; DSSE-KMS is KMS's too:
#: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-s3-bucket-serversideencryptionbydefault.html)
KMS_ALGORITHMS = ("aws:kms", "aws:kms:dsse")


def encrypts_with_kms(resources: list[dict[str, Any]], bucket: Any) -> bool:
    """Does the template's bucket named `bucket` encrypt new objects with a KMS key by default
    (`BucketEncryption`)? Then an upload's eTag is no MD5 of its bytes (docs/one_charge_per_order.md)."""
    for resource in resources:
        if resource.get("type") != "AWS::S3::Bucket" or not bucket or resource.get("name") != bucket:
            continue
        rules = ((resource.get("properties") or {}).get("BucketEncryption") or {}).get(
            "ServerSideEncryptionConfiguration") or []
        return any(isinstance(rule, dict) and str((rule.get("ServerSideEncryptionByDefault") or {}).get(
            "SSEAlgorithm", "")).lower() in KMS_ALGORITHMS for rule in rules)
    return False


@dataclass(frozen=True)
class Fanout:
    """An SNS topic of the template that feeds an SQS queue (docs/check_from_a_template.md, P24)."""

    topic: str  # the topic's logical id
    subscription: str  # where the subscription is declared
    raw: bool  # its RawMessageDelivery (false by default: SNS's envelope)
    bucket: str = ""  # the logical id of the bucket that notifies the topic ("": none in the template)
    notification: str = ""  # where that notification is declared
    events: str = ""  # its event types, as declared

    def describe(self, topic_name: str, bucket_name: str) -> str:
        """The report's account of it."""
        said = (f"fed through SNS topic {topic_name} ({self.subscription}, RawMessageDelivery "
                + ("true: each body is S3's event as is)" if self.raw else
                   "off: each body is SNS's envelope, S3's event the string in its Message)"))
        if self.bucket:
            return said + f", which bucket {bucket_name} notifies ({self.notification}" + (
                f", {self.events})" if self.events else ")")
        return said + ", which no bucket of the template notifies: the check's own bucket's S3 event is its Message"


def fanout(resources: dict[str, Any], queue: str, value: Any, named: dict[str, str]) -> Fanout | None:
    """The SNS topic of the template whose sqs subscription delivers to the queue `queue` (an
    `AWS::SNS::Subscription` with Protocol sqs, or the topic's own `Subscription` list, its Endpoint
    the queue's Arn), with the bucket that notifies it (`NotificationConfiguration.TopicConfigurations`,
    CloudFormation's `Topic` or the S3 API's `TopicArn`); None when no topic feeds it. SNS sends the
    queue its JSON envelope unless RawMessageDelivery is true
    (https://docs.aws.amazon.com/sns/latest/dg/sns-large-payload-raw-message-delivery.html)."""
    def to_queue(props: Any) -> bool:
        if not isinstance(props, dict) or str(value(props.get("Protocol"))).lower() != "sqs":
            return False
        endpoint = props.get("Endpoint")
        return names(endpoint, f"{queue}.Arn") or names(endpoint, queue) or _queue_of(endpoint, value, named) == queue

    found: Fanout | None = None
    for rid, res in resources.items():
        kind, rp = res.get("Type"), res.get("Properties") or {}
        if kind == "AWS::SNS::Subscription" and to_queue(rp):
            topic = referenced_id(rp.get("TopicArn")) or _topic_of(rp.get("TopicArn"), value, named)
            if (resources.get(topic) or {}).get("Type") == "AWS::SNS::Topic":
                raw = str(value(rp.get("RawMessageDelivery", False))).lower() == "true"
                found = Fanout(topic, f"AWS::SNS::Subscription {rid}", raw)
                break
        if kind == "AWS::SNS::Topic" and any(to_queue(s) for s in rp.get("Subscription") or []):
            found = Fanout(rid, f"AWS::SNS::Topic {rid} Subscription", False)  # no raw setting there
            break
    if found is None:
        return None
    for rid, res in resources.items():
        config = ((res.get("Properties") or {}).get("NotificationConfiguration") or {})
        for n in config.get("TopicConfigurations") or [] if isinstance(config, dict) else []:
            arn = n.get("Topic", n.get("TopicArn")) if isinstance(n, dict) else None
            if referenced_id(arn) == found.topic or (arn is not None and _topic_of(arn, value, named) == found.topic):
                _, events = _delivered_by(n.get("Event", n.get("Events")))
                bucket = rid if res.get("Type") == "AWS::S3::Bucket" else \
                    referenced_id(res["Properties"].get("BucketName")) or str(value(res["Properties"].get("BucketName")) or "")
                return Fanout(found.topic, found.subscription, found.raw, bucket,
                              f"{res.get('Type')} {rid} NotificationConfiguration", events)
    return found


def _topic_of(arn: Any, value: Any, named: dict[str, str]) -> str:
    """The logical id of the template's topic an ARN names: arn:PARTITION:sns:REGION:ACCOUNT:NAME."""
    parts = str(value(arn)).split(":") if arn is not None else []
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sns":
        return ""
    return next((rid for rid, name in named.items() if name == parts[5]), "")
