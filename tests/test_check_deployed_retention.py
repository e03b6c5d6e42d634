"""`idem check --template`, the function as deployed (issue 41): an EventBridge rule's target
`RetryPolicy` and `DeadLetterConfig`, and the SQS source queue's `MessageRetentionPeriod`, are the
template's (AWS's defaults where it says nothing), are used by the timings the check draws, and are
stated in the report's header.

- EventBridge retries a target for up to the policy's MaximumEventAgeInSeconds (60-86,400 s) and
  MaximumRetryAttempts (0-185), by default 24 h and 185 times
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html,
  https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html): its copy of an
  event comes within that window (none when it never retries), then Lambda's queue may hold it up to
  the function's maximum event age.
- SQS keeps a message for its retention period, 60 s to 14 days, 4 days by default, and deletes it
  after (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html):
  no copy and no redelivery of it comes later than that, and an expired message is not moved to the
  dead-letter queue."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from idem.explore.families import sqs_timed, timings
from idem.explore.families.schedule import Schedule
from idem.explore.run.runner import run_batch
from idem.explore.target.target import resolve
from idem.explore.target.deployed import Deployed
from idem.sim.faults import Boundary, FaultPlan, Side
from idem.sim.runtime import on_clock
from idem.sim.triggers import SqsFedLambda, SqsMapping
from idem.sim.world import LocalWorld

HERE = Path(__file__).parent
TEMPLATE = HERE / "templates" / "deployed_retention.yaml"
SQS = HERE / "templates" / "deployed_sqs.yaml"
SCHEMA = json.loads((HERE.parent / "docs" / "check-report.schema.json").read_text())
DEPLOYED_SCHEMA = SCHEMA["oneOf"][0]["properties"]["deployed"]
DAY, FOUR_DAYS, SIX_HOURS = 86_400, 345_600, 21_600


def _deployed(template: Path, function: str) -> dict:
    from idem.explore.target.template_function import read

    return read(str(template), function).deployed


# -- read from the template, in every form it declares the trigger ---------------------------------
@pytest.mark.parametrize("function, attempts, age, dead_letter", [
    ("Ruled", 3, 3600, "Missed"),  # SAM's EventBridgeRule event, RetryPolicy and DeadLetterConfig
    ("NeverRetried", 0, 60, ""),  # an AWS::Events::Rule target that never retries
    ("Defaults", 185, DAY, ""),  # no RetryPolicy: EventBridge's defaults, 185 times over 24 h
])
def test_an_eventbridge_targets_retry_policy_and_dead_letter_queue_are_the_templates(function, attempts, age,
                                                                                     dead_letter):
    found = _deployed(TEMPLATE, function)
    assert (found["eventbridge_retry_attempts"], found["eventbridge_event_age"],
            found["eventbridge_dead_letter"]) == (attempts, age, dead_letter)
    jsonschema.validate(found, DEPLOYED_SCHEMA)


def test_an_sqs_queues_retention_period_is_the_templates_or_four_days():
    assert _deployed(TEMPLATE, "Kept")["message_retention"] == 600
    assert _deployed(SQS, "Batch")["message_retention"] == FOUR_DAYS  # no MessageRetentionPeriod: SQS's default
    jsonschema.validate(_deployed(TEMPLATE, "Kept"), DEPLOYED_SCHEMA)


def test_the_header_states_the_retry_policy_and_the_retention_period():
    ruled = Deployed.of(_deployed(TEMPLATE, "Ruled")).describe("eventbridge")
    assert ("EventBridge target: MaximumRetryAttempts 3, MaximumEventAgeInSeconds 3600, "
            "DeadLetterConfig Missed") in ruled
    assert "MaximumRetryAttempts 2, MaximumEventAgeInSeconds 21600" in ruled  # Lambda's own, as before
    defaults = Deployed.of(_deployed(TEMPLATE, "Defaults")).describe("eventbridge")
    assert "EventBridge target: MaximumRetryAttempts 185, MaximumEventAgeInSeconds 86400, no DeadLetterConfig" in defaults
    assert "EventBridge" not in Deployed.of(_deployed(SQS, "Plain")).describe("s3")  # S3 invokes it: no rule
    assert "(no rule targets it in the template: EventBridge's defaults)" not in defaults  # PlainRule does
    forced = Deployed.of(_deployed(SQS, "Plain")).describe("eventbridge")  # --trigger eventbridge, no rule
    assert forced.endswith("MaximumEventAgeInSeconds 86400, no DeadLetterConfig (no rule targets it in the "
                           "template: EventBridge's defaults)")
    assert _deployed(TEMPLATE, "NeverRetried")["eventbridge_rule"] == "AWS::Events::Rule NoRetries"
    assert "MessageRetentionPeriod 600 s" in Deployed.of(_deployed(TEMPLATE, "Kept")).describe("sqs")


# -- used by the timings the check draws ------------------------------------------------------------
def test_eventbridges_copy_comes_within_its_targets_retry_policy():
    assert timings.copy_range("eventbridge", SIX_HOURS) == (0.0, DAY + SIX_HOURS)  # no template: 24 h
    assert timings.copy_range("eventbridge", SIX_HOURS, 3600.0) == (0.0, 3600.0 + SIX_HOURS)
    windows = {f: Deployed.of(_deployed(TEMPLATE, f)).eventbridge_window() for f in ("Ruled", "NeverRetried", "Defaults")}
    assert windows == {"Ruled": 3600.0, "NeverRetried": 0.0, "Defaults": float(DAY)}


@pytest.mark.parametrize("function, copy_at", [("NeverRetried", SIX_HOURS), ("Ruled", 3600 + SIX_HOURS),
                                                ("Defaults", DAY + SIX_HOURS)])
def test_a_checked_copy_at_its_ranges_high_end_comes_when_the_deployed_policy_says(function, copy_at):
    deployed = Deployed.of(_deployed(TEMPLATE, function))
    handler = resolve(str(HERE / "handlers" / "eventbridge_keyed.py") + ":lambda_handler")
    from dataclasses import replace

    handler = replace(handler, deployed=deployed)
    (result,) = run_batch(handler, [Schedule(None, "duplicate", None, 0, timing=timings.HIGH_ENDS)], {}, (),
                          "make_provider", 7, trigger="eventbridge")
    assert [a.start for a in result.attempts] == [0.0, float(copy_at)]


def test_sqs_copies_come_until_the_queues_retention_period_ends():
    assert timings.sqs_copy_range() == (0.0, float(FOUR_DAYS))  # measured from the message's own send
    assert timings.sqs_copy_range(600.0) == (0.0, 600.0)
    assert timings.sqs_copy_delay(timings.HIGH_ENDS, 600.0) == 600.0
    late = [s for s in sqs_timed.schedules(Schedule, (0,), [], [], retention=600.0) if s.dimension == "late"]
    # a copy 121 s later is within 10 minutes; one past 15 minutes would be of a message SQS deleted
    assert {s.later.seconds for s in late if s.later.how != "upload" and s.later.seconds} == {121.0}
    assert any("high end (the queue's retention period, 10 min)" in s.label() for s in late)
    assert any("high end (the queue's retention period, 4 d)" in s.label()
               for s in sqs_timed.schedules(Schedule, (0,), [], []))
    assert Deployed.of(_deployed(TEMPLATE, "Kept")).sqs_mapping(0).retention == 600.0


def test_an_sqs_message_past_its_retention_period_is_never_received_again_nor_dead_lettered():
    with LocalWorld(prefix="keep") as world:
        env = {**world.env(), "AWS_DEFAULT_REGION": "us-east-1"}
        runtime = SqsFedLambda(world, env, fault=FaultPlan(Boundary("provider:charge", 1, Side.BEFORE), "always"),
                               handler=str(HERE / "handlers" / "sqs_keyed.py") + ":lambda_handler",
                               mapping=SqsMapping(visibility_timeout=40.0, max_receive_count=10, retention=100.0))
        from idem.explore.run.runner import order_body

        runtime.send_message(json.dumps(world.event(world.upload("acct/a.json", order_body(1)))))
        runtime.copy_messages(at=150.0)  # SQS's own copy, after the message was deleted: never received
        attempts = runtime.run()
        assert [a.start for a in attempts] == [0.0, 40.0, 80.0]  # at 120 s it is 120 s old: gone
        with on_clock(world.clock):
            assert world.failure_queue() == []  # expired, not moved to the dead-letter queue


def test_the_cli_report_states_the_rule_targets_policy_as_deployed():
    from check_cli import cli

    code, out, err = cli("--template", str(TEMPLATE), "--function", "NeverRetried", "--workers", "1", "--retries", "0")
    assert code in (0, 1), err  # the header is stated whatever the verdict
    assert "trigger: eventbridge" in out
    assert ("as deployed (deployed_retention.yaml, function NeverRetried): Timeout 30 s, MemorySize 128 MB; "
            "MaximumRetryAttempts 2, MaximumEventAgeInSeconds 21600, no failure destination (an event that fails "
            "every attempt is discarded); fed by EventBridge, AWS::Events::Rule NoRetries, every key, every upload; "
            "EventBridge target: MaximumRetryAttempts 0, "
            "MaximumEventAgeInSeconds 60, no DeadLetterConfig; the runs: --retries 0 (MaximumRetryAttempts)") in out


def test_eventbridges_late_copy_is_named_for_its_own_range():
    from idem.explore.families.build import schedules_for
    from idem.sim.faults import END

    def highs(trigger):
        return {s.label() for s in schedules_for([END], (0,), ("versioned",), trigger)
                if s.dimension == "late" and s.timing == timings.HIGH_ENDS}
    assert any("(EventBridge's retry window plus the maximum event age)" in label for label in highs("eventbridge"))
    assert any("(a minute plus the maximum event age)" in label for label in highs("s3"))
