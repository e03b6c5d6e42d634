"""The function as its template deploys it: the settings `idem check --template` runs it with.

Read from the template (the function's own properties over `Globals.Function`, as SAM merges
them, and the resources that configure it from outside), each with AWS's default where the
template says nothing:

- `Timeout` (default 3 s, at most 900 s) and `MemorySize` (default 128 MB)
  (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html,
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html);
- `ReservedConcurrentExecutions` (none by default): at most that many environments at once, an
  asynchronous event throttled beyond it tried again for up to its maximum age
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html; idem.sim.runtime.throttles);
- for an asynchronous trigger (S3, EventBridge), `MaximumRetryAttempts` (default 2) and
  `MaximumEventAgeInSeconds` (default 21,600, six hours) from the function's `EventInvokeConfig`
  or an `AWS::Lambda::EventInvokeConfig` naming it
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html);
- for an asynchronous trigger, its failure destination: SAM's `DeadLetterQueue`, CloudFormation's
  `DeadLetterConfig`, or `DestinationConfig.OnFailure` in its `EventInvokeConfig` (none: Lambda
  discards an event that fails every attempt or outlives its maximum age: "To retain discarded
  events, configure a dead-letter queue",
  https://docs.amazonaws.cn/sdkfornet/v3/apidocs/items/Lambda/MILambdaPutFunctionEventInvokeConfigPutFunctionEventInvokeConfigRequest.html);
- for SQS, the mapping's `BatchSize` (default 10) and `FunctionResponseTypes`
  (`ReportBatchItemFailures`, off by default), and the source queue's `VisibilityTimeout`
  (default 30 s) and `RedrivePolicy.maxReceiveCount` (none: no dead-letter queue)
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html,
  https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sqs-queue.html),
  and the queue's `MessageRetentionPeriod` (60 s to 14 days, 4 days by default: SQS deletes a
  message that old, so no copy or redelivery of it comes later, and it never reaches the
  dead-letter queue:
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html);
- for EventBridge, the rule target's `RetryPolicy`: `MaximumRetryAttempts` (0-185) and
  `MaximumEventAgeInSeconds` (60-86,400), by default 185 times over 24 hours
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html,
  https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html), and its
  `DeadLetterConfig` (where EventBridge puts an event it could not deliver to the function: the
  check names it; no schedule makes EventBridge's own delivery to Lambda fail).

The runs use them (`runtime_options`, `sqs_mapping`, `retries`) and the report's header says them
(`describe`). Lambda refuses an SQS mapping whose queue hides a message for less time than the
function may run (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): so
does the check, in one line (`refusal`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

#: AWS's defaults, where a template says nothing (the pages in the module docstring).
DEFAULT_TIMEOUT, DEFAULT_MEMORY = 3, 128
DEFAULT_RETRIES, DEFAULT_EVENT_AGE = 2, 21_600
DEFAULT_BATCH_SIZE, DEFAULT_VISIBILITY = 10, 30
#: SQS's default MessageRetentionPeriod, 4 days (API_SetQueueAttributes, above)
DEFAULT_RETENTION = 345_600
#: What an unqualified function ARN invokes (its EventInvokeConfig's Qualifier, `invoke_config`).
LATEST = "$LATEST"
#: EventBridge's default retry policy for a rule target: 185 attempts over 24 hours (eb-rule-retry-policy, above)
DEFAULT_EVENTBRIDGE_ATTEMPTS, DEFAULT_EVENTBRIDGE_AGE = 185, 86_400


@dataclass(frozen=True)
class Deployed:
    """One function's settings as deployed (see the module)."""

    source: str  # "template.yaml, function Notifier": where they were read
    timeout: int = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY
    max_retry_attempts: int = DEFAULT_RETRIES
    max_event_age: int = DEFAULT_EVENT_AGE
    batch_size: int = DEFAULT_BATCH_SIZE
    report_batch_item_failures: bool = False
    visibility_timeout: int = DEFAULT_VISIBILITY
    max_receive_count: int = 0  # 0: the queue has no redrive policy (no dead-letter queue)
    queue: str = ""  # the SQS source queue's name, when an SQS trigger feeds the function
    message_retention: int = DEFAULT_RETENTION  # the SQS source queue's MessageRetentionPeriod
    #: its dead-letter queue's (RedrivePolicy's deadLetterTargetArn), when the template declares that queue (0: not)
    dead_letter_retention: int = 0
    #: the EventBridge rule target's RetryPolicy, and its DeadLetterConfig queue ("": none)
    eventbridge_retry_attempts: int = DEFAULT_EVENTBRIDGE_ATTEMPTS
    eventbridge_event_age: int = DEFAULT_EVENTBRIDGE_AGE
    eventbridge_dead_letter: str = ""
    eventbridge_rule: str = ""  # where the template declares the rule that targets it ("": none)
    #: ReservedConcurrentExecutions (-1: none reserved): how many environments may run it at once
    reserved_concurrency: int = -1
    #: where a failed asynchronous event goes ("DeadLetterQueue Failures"; "": none, Lambda discards it)
    failure_destination: str = ""
    #: how long that destination keeps a failed event, when it is an SQS queue (its MessageRetentionPeriod,
    #: SQS's 4 days unless it says otherwise): the event can be redriven until its last second
    failure_retention: int = DEFAULT_RETENTION
    #: an EventInvokeConfig left out: it configures another version or alias than the trigger invokes ("": none)
    unapplied: str = ""
    #: what feeds it, as the template declares it: where, its bucket, key filter and event types
    #: (`template_triggers.Trigger.describe`); "" when not read from a template
    trigger: str = ""
    #: the SNS topic (its name) the SQS source queue subscribes to, which the bucket notifies ("": none), and
    #: the subscription's RawMessageDelivery (docs/check_from_a_template.md, P24)
    sns_topic: str = ""
    raw_message_delivery: bool = False

    @classmethod
    def of(cls, given: "dict[str, Any] | Deployed | None") -> "Deployed | None":
        if given is None or isinstance(given, Deployed):
            return given
        return cls(**given)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def runtime_options(self) -> dict[str, Any]:
        """What `LocalLambda` takes from these settings."""
        options: dict[str, Any] = {"timeout": float(self.timeout), "max_event_age": float(self.max_event_age),
                                   "memory_mb": self.memory_mb}
        if self.reserved_concurrency >= 0:  # none reserved: no limit of its own
            options["reserved_concurrency"] = self.reserved_concurrency
        return options

    def sns_feed(self) -> Any:
        """The topic the source queue is fed through (`idem.sim.triggers.SnsTopic`), or None."""
        from ...sim.triggers import SnsTopic  # the runtime's: the check's process only

        return SnsTopic(self.sns_topic, self.raw_message_delivery) if self.queue and self.sns_topic else None

    def eventbridge_window(self) -> float:
        """How long after the first delivery EventBridge may still deliver the event to the function
        again: its retry policy's maximum age, or 0 when it makes no retry attempt."""
        return float(self.eventbridge_event_age) if self.eventbridge_retry_attempts else 0.0

    def retries(self, trigger: str) -> tuple[int, ...]:
        """The retry settings the schedules try: the template's own. Under SQS, a schedule's
        retries r stand for r + 1 receives of a failing message; the faults fail arrivals 1-3,
        so a maxReceiveCount above 3 runs as 2 (the receives after the third are not faulted)."""
        if trigger == "sqs":
            if not self.queue:  # --trigger sqs on a function the template feeds otherwise
                return (0, 1, 2)
            receives = self.max_receive_count or 3
            return (min(2, receives - 1),)
        return (self.max_retry_attempts,)

    def sqs_mapping(self, retries: int) -> Any:
        """The event source mapping and source queue as deployed (`idem.sim.triggers.SqsMapping`)."""
        from ...sim.triggers import VISIBILITY_TIMEOUT, SqsMapping  # the runtime's: the check's process only

        if not self.queue:  # no SQS source in the template: the check's own, long enough for the Timeout
            return SqsMapping(visibility_timeout=max(VISIBILITY_TIMEOUT, 6.0 * self.timeout),
                              max_receive_count=retries + 1, retention=float(self.message_retention))
        # the template's maxReceiveCount, unless --retries asked for another (then retries + 1)
        deployed = self.max_receive_count and retries == self.retries("sqs")[0]
        return SqsMapping(batch_size=self.batch_size, visibility_timeout=float(self.visibility_timeout),
                          max_receive_count=self.max_receive_count if deployed else retries + 1,
                          report_batch_item_failures=self.report_batch_item_failures,
                          retention=float(self.message_retention))

    def refusal(self, trigger: str) -> str:
        """Why AWS would refuse to deploy this function as the template has it, or ""."""
        if trigger == "sqs" and self.queue and self.visibility_timeout < self.timeout:
            return (f"{self.source}: the queue {self.queue or '(its SQS source)'} has VisibilityTimeout "
                    f"{self.visibility_timeout} s, less than the function's Timeout {self.timeout} s: Lambda "
                    "refuses such an event source mapping "
                    "(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html); "
                    "raise the queue's VisibilityTimeout (AWS advises six times the Timeout)")
        return ""

    def describe(self, trigger: str, ran: tuple[int, ...] = ()) -> str:
        """The report's header line: the settings the runs used, as deployed (`ran`: the retry
        settings the schedules ran with, when --retries asked for others)."""
        line = self._describe(trigger)
        if ran and tuple(ran) != self.retries(trigger):
            what = "maxReceiveCount = retries + 1" if trigger == "sqs" else "MaximumRetryAttempts"
            line += f"; the runs: --retries {','.join(map(str, ran))} ({what})"
        return line

    def _describe(self, trigger: str) -> str:
        head = f"as deployed ({self.source}): Timeout {self.timeout} s, MemorySize {self.memory_mb} MB"
        if self.reserved_concurrency >= 0:  # idem.sim.runtime.throttles
            head += f", ReservedConcurrentExecutions {self.reserved_concurrency}"
        if trigger == "sqs" and not self.queue:
            return f"{head}; SQS: no SQS source in the template: the check's own mapping (BatchSize 10)"
        if trigger == "sqs":
            redrive = (f"maxReceiveCount {self.max_receive_count}" if self.max_receive_count
                       else "no RedrivePolicy (run with maxReceiveCount 3; on AWS a failing message "
                            "returns until its retention period ends, then is lost)")
            return (f"{head}; SQS: BatchSize {self.batch_size}, ReportBatchItemFailures "
                    f"{'on' if self.report_batch_item_failures else 'off'}, VisibilityTimeout "
                    f"{self.visibility_timeout} s, {redrive}, MessageRetentionPeriod {self.message_retention} s"
                    + (f", its dead-letter queue's {self.dead_letter_retention} s" if self.dead_letter_retention else "")
                    + (f"; {self.trigger}" if self.sns_topic and self.trigger else ""))
        line = (f"{head}; MaximumRetryAttempts {self.max_retry_attempts}, MaximumEventAgeInSeconds "
                f"{self.max_event_age}, " + (f"failure destination {self.failure_destination}"
                                             + (f" (MessageRetentionPeriod {self.failure_retention} s)"
                                                if self.failure_retention != DEFAULT_RETENTION else "")
                                             if self.failure_destination else "no failure destination "
                                             "(an event that fails every attempt is discarded)")
                + (f" ({self.unapplied})" if self.unapplied else ""))
        if self.trigger:
            line += f"; fed by {self.trigger}"
        if trigger == "eventbridge":
            dead = (f"DeadLetterConfig {self.eventbridge_dead_letter}" if self.eventbridge_dead_letter
                    else "no DeadLetterConfig")
            line += (f"; EventBridge target: MaximumRetryAttempts {self.eventbridge_retry_attempts}, "
                     f"MaximumEventAgeInSeconds {self.eventbridge_event_age}, {dead}"
                     + ("" if self.eventbridge_rule else " (no rule targets it in the template: EventBridge's defaults)"))
        return line


class Unreadable(ValueError):
    """A setting the check needs as a number holds what it cannot resolve (exit 2, in one line)."""


def _whole(value: Any, node: Any, what: str) -> int:
    """`node` (a template value) resolved to a whole number, or Unreadable naming `what` and what it holds."""
    found = value(node)
    if isinstance(found, bool) or not isinstance(found, (int, str)) or not str(found).strip().lstrip("-").isdigit():
        raise Unreadable(f"its {what} is {json.dumps(node, default=str)}, which the check cannot resolve to a "
                         "number (it reads parameters, conditions, Fn::If, Fn::FindInMap, Ref, GetAtt and Sub): "
                         "write the value there, or a parameter's Ref given with --parameter NAME=VALUE")
    return int(found)


def read(function: dict[str, Any], resources: dict[str, Any], logical_id: str, source: str,
         value: Any, sqs_source: "tuple[str, dict[str, Any]] | None" = None,
         rule_target: "dict[str, Any] | None" = None, rule: str = "", invoked_as: str = LATEST) -> Deployed:
    """The settings of `function` (its properties, Globals merged) in `resources` (the resolved
    template's); `value` resolves an intrinsic; `sqs_source` is (the queue's logical id, the
    mapping's properties) when SQS feeds the function; `rule_target` the EventBridge rule target's
    RetryPolicy and DeadLetterConfig (`template_triggers.Trigger.target`) when a rule does, `rule`
    where that rule is declared; `invoked_as` what an asynchronous trigger invokes: $LATEST, or an
    alias (`template_triggers.Trigger.invokes`)."""
    invoke, unapplied = invoke_config(function, resources, logical_id, value, invoked_as)
    unapplied = "" if sqs_source and rule_target is None else unapplied  # fed by SQS: not invoked asynchronously
    settings: dict[str, Any] = {
        "source": source,
        "timeout": _whole(value, function.get("Timeout", DEFAULT_TIMEOUT), "Timeout"),
        "memory_mb": _whole(value, function.get("MemorySize", DEFAULT_MEMORY), "MemorySize"),
        "max_retry_attempts": _whole(value, invoke.get("MaximumRetryAttempts", DEFAULT_RETRIES),
                                     "EventInvokeConfig's MaximumRetryAttempts"),
        "max_event_age": _whole(value, invoke.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE),
                                "EventInvokeConfig's MaximumEventAgeInSeconds"),
        "reserved_concurrency": _whole(value, function.get("ReservedConcurrentExecutions", -1),
                                       "ReservedConcurrentExecutions"),
        "failure_destination": failure_destination(function, invoke, value),
        "unapplied": unapplied,
    }
    destination = (resources.get(settings["failure_destination"].partition(" ")[2]) or {})
    if destination.get("Type") == "AWS::SQS::Queue":
        settings["failure_retention"] = _whole(value, (destination.get("Properties") or {}).get(
            "MessageRetentionPeriod", DEFAULT_RETENTION), "failure queue's MessageRetentionPeriod")
    if sqs_source:
        queue_id, mapping = sqs_source
        queue = (resources.get(queue_id) or {}).get("Properties") or {}
        redrive = value(queue.get("RedrivePolicy")) or {}
        if isinstance(redrive, str):  # CloudFormation takes the policy as JSON text too
            redrive = json.loads(redrive)
        types = value(mapping.get("FunctionResponseTypes")) or []
        settings.update(
            batch_size=_whole(value, mapping.get("BatchSize", DEFAULT_BATCH_SIZE), "event source mapping's BatchSize"),
            report_batch_item_failures="ReportBatchItemFailures" in types,
            visibility_timeout=_whole(value, queue.get("VisibilityTimeout", DEFAULT_VISIBILITY),
                                      "queue's VisibilityTimeout"),
            max_receive_count=_whole(value, redrive.get("maxReceiveCount", 0) or 0, "queue's maxReceiveCount"),
            queue=queue_id,
            message_retention=_whole(value, queue.get("MessageRetentionPeriod", DEFAULT_RETENTION),
                                     "queue's MessageRetentionPeriod"))
        arn = redrive.get("deadLetterTargetArn")  # resolved: the queue whose own ARN resolves to it
        dead_letter = next((res for rid, res in resources.items() if res.get("Type") == "AWS::SQS::Queue"
                            and arn and value({"Fn::GetAtt": [rid, "Arn"]}) == arn), {})
        if dead_letter:
            settings["dead_letter_retention"] = _whole(value, (dead_letter.get("Properties") or {}).get(
                "MessageRetentionPeriod", DEFAULT_RETENTION), "dead-letter queue's MessageRetentionPeriod")
    if rule_target is not None:
        policy = value(rule_target.get("RetryPolicy")) or {}
        dead = (rule_target.get("DeadLetterConfig") or {}).get("Arn")
        settings.update(
            eventbridge_retry_attempts=_whole(value, policy.get("MaximumRetryAttempts", DEFAULT_EVENTBRIDGE_ATTEMPTS),
                                              "rule target's MaximumRetryAttempts"),
            eventbridge_event_age=_whole(value, policy.get("MaximumEventAgeInSeconds", DEFAULT_EVENTBRIDGE_AGE),
                                         "rule target's MaximumEventAgeInSeconds"),
            eventbridge_dead_letter=referenced_id(dead) or str(value(dead) or ""), eventbridge_rule=rule)
    return Deployed(**settings)


def invoke_config(function: dict[str, Any], resources: dict[str, Any], logical_id: str, value: Any,
                  invoked_as: str) -> tuple[dict[str, Any], str]:
    """The EventInvokeConfig that applies to what the trigger invokes, and why one was left out ("").
    It "configures options for asynchronous invocation on a version or an alias" (its Qualifier,
    https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-lambda-eventinvokeconfig.html):
    one on the alias does nothing for a trigger that invokes the function unqualified ($LATEST). SAM's
    EventInvokeConfig property is on the AutoPublishAlias alias when there is one, else on $LATEST
    (as aws-sam-translator writes it)."""
    found: list[tuple[str, dict[str, Any]]] = []
    if function.get("EventInvokeConfig"):
        found.append((published_alias(function, value), dict(function["EventInvokeConfig"])))
    for res in resources.values():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Lambda::EventInvokeConfig" and names_function(
                props.get("FunctionName"), logical_id, function_name(function, value), value):
            qualifier = value(props.get("Qualifier"))
            found.append((qualifier if isinstance(qualifier, str) else invoked_as, dict(props)))
    invoke: dict[str, Any] = {}
    for qualifier, props in found:
        if qualifier == invoked_as:
            invoke = {**invoke, **props}
    left = sorted({q for q, _ in found if q != invoked_as})
    unapplied = (f"its EventInvokeConfig is on {', '.join(left)}, and the trigger invokes {invoked_as}: not "
                 "applied, so AWS's defaults are (point the trigger at the alias)") if left and not invoke else ""
    return invoke, unapplied


def failure_destination(function: dict[str, Any], invoke: dict[str, Any], value: Any) -> str:
    """The function's failure destination, as "PROPERTY target", or "" for none: SAM's DeadLetterQueue,
    CloudFormation's DeadLetterConfig, or its EventInvokeConfig's OnFailure (SAM makes the queue or
    topic itself for an OnFailure of Type SQS or SNS with no Destination)."""
    def key(node: Any, name: str) -> Any:
        return node.get(name) if isinstance(node, dict) else None

    on_failure = key(invoke.get("DestinationConfig"), "OnFailure")
    for name, node in (("DeadLetterQueue", key(function.get("DeadLetterQueue"), "TargetArn")),
                       ("DeadLetterConfig", key(function.get("DeadLetterConfig"), "TargetArn")),
                       ("OnFailure", key(on_failure, "Destination") or key(on_failure, "Type"))):
        if node:
            return f"{name} {referenced_id(node) or value(node)}"
    return ""


def referenced_id(node: Any) -> str:
    """The logical id a Ref or GetAtt names, else ""."""
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            return str(arg)
        if fn == "Fn::GetAtt":
            return str(arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0])
    return ""


def names(node: Any, name: str) -> bool:
    """Whether a template value is a Ref or GetAtt of `name`, or a !Sub that writes `${name}`."""
    if referenced_id(node):
        return referenced_id(node) == name
    if isinstance(node, dict) and len(node) == 1 and "Fn::Sub" in node:
        text = node["Fn::Sub"] if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"][0]
        return f"${{{name}}}" in text
    return False


def names_function(node: Any, logical_id: str, name: str = "", value: Any = None) -> bool:
    """Whether a template value names the function `logical_id`: its Ref, its Arn (GetAtt), SAM's
    `X.Alias` or `X.Version` (what AutoPublishAlias makes, "Referenceable property: X.Alias",
    https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-specification-generated-resources-function.html),
    or a !Sub of any of them; or, where the function has a FunctionName (`name`), that name written
    out (`value` resolves a !Sub): the name, its ARN or its partial ARN, with a version or alias or
    not, as Lambda's API takes them ("Name formats", FunctionName:
    https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionEventInvokeConfig.html)."""
    if any(names(node, f"{logical_id}{part}") for part in ("", ".Arn", ".Alias", ".Version")):
        return True
    if not name or referenced_id(node):
        return False
    text = value(node) if value is not None else node
    return isinstance(text, str) and named_by_text(text) == name


def named_by_text(text: str) -> str:
    """The function name a written-out FunctionName or ARN holds: `NAME`, `NAME:QUALIFIER`,
    `ACCOUNT:function:NAME[:QUALIFIER]` or `arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]`."""
    parts = text.split(":")
    if len(parts) >= 7 and parts[0] == "arn" and parts[2] == "lambda" and parts[5] == "function":
        return parts[6]
    if len(parts) >= 3 and parts[1] == "function":
        return parts[2]
    return parts[0] if len(parts) <= 2 else ""


def function_name(function: dict[str, Any], value: Any) -> str:
    """The function's FunctionName, where its template gives one ("": CloudFormation makes one up)."""
    given = value(function.get("FunctionName")) if function.get("FunctionName") is not None else ""
    return given if isinstance(given, str) else ""


def published_alias(function: dict[str, Any], value: Any) -> str:
    """The alias SAM's AutoPublishAlias makes, and points the function's Events and its EventInvokeConfig
    property at; $LATEST without one."""
    return str(value(function.get("AutoPublishAlias")) or LATEST)
