"""`idem check --template`: the function as deployed. Its Timeout, MemorySize, async retry settings,
SQS mapping and queue settings are the template's (Globals included, AWS's defaults where it says
nothing), used by every run and stated in the report's header (idem.explore.target.deployed)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from check_cli import HANDLERS, cli

TEMPLATES = Path(__file__).parent / "templates"
SQS = TEMPLATES / "deployed_sqs.yaml"
FIFO = HANDLERS / "sns_fifo_deployed.yaml"


def _deployed(template: Path, function: str) -> dict:
    from idem.explore.target.template_function import read

    return read(str(template), function).deployed


def test_globals_give_timeout_memory_and_the_async_retry_settings():
    long, short = _deployed(FIFO, "LongNotifier"), _deployed(FIFO, "ShortNotifier")
    assert (long["timeout"], long["memory_mb"], long["max_retry_attempts"], long["max_event_age"]) == (900, 1024, 1, 3600)
    assert short["timeout"] == 30 and short["memory_mb"] == 1024  # its own Timeout over Globals'


def test_an_event_invoke_config_resource_naming_the_function_sets_its_retries():
    plain = _deployed(SQS, "Plain")
    assert (plain["max_retry_attempts"], plain["max_event_age"]) == (0, 120)
    assert (plain["timeout"], plain["memory_mb"]) == (60, 128)  # Globals' Timeout; MemorySize's default


def test_an_sqs_event_gives_batch_size_report_batch_item_failures_visibility_and_max_receive_count():
    batch = _deployed(SQS, "Batch")
    assert (batch["batch_size"], batch["report_batch_item_failures"]) == (1, True)
    assert (batch["visibility_timeout"], batch["max_receive_count"], batch["queue"]) == (360, 5, "Work")


def test_an_event_source_mapping_outside_the_function_is_its_sqs_trigger_with_sqs_defaults():
    from idem.explore.target.template_function import read

    found = read(str(SQS), "Mapped")
    assert found.trigger == "sqs" and found.triggers[0].declared == "AWS::Lambda::EventSourceMapping Mapping"
    # BatchSize 10, no ReportBatchItemFailures, VisibilityTimeout 30, no redrive policy: AWS's defaults
    assert {k: found.deployed[k] for k in ("batch_size", "report_batch_item_failures", "visibility_timeout",
                                             "max_receive_count")} == {
        "batch_size": 10, "report_batch_item_failures": False, "visibility_timeout": 30, "max_receive_count": 0}


def test_the_runs_use_the_deployed_settings():
    from idem.explore.target.deployed import Deployed

    batch = Deployed.of(_deployed(SQS, "Batch"))
    mapping = batch.sqs_mapping(batch.retries("sqs")[0])
    assert (mapping.batch_size, mapping.visibility_timeout, mapping.max_receive_count,
            mapping.report_batch_item_failures) == (1, 360.0, 5, True)
    assert batch.runtime_options() == {"timeout": 60.0, "max_event_age": 21600.0, "memory_mb": 512}
    assert Deployed.of(_deployed(SQS, "Plain")).retries("s3") == (0,)
    assert "Timeout 60 s, MemorySize 512 MB; SQS: BatchSize 1, ReportBatchItemFailures on, VisibilityTimeout " \
           "360 s, maxReceiveCount 5" in batch.describe("sqs")


def test_the_context_reports_the_deployed_memory():
    from idem.sim.runtime import LocalLambda
    from idem.sim.world import LocalWorld

    with LocalWorld(prefix="deployed-mem") as world:
        runtime = LocalLambda(world, {}, memory_mb=1024, timeout=900.0, handler=f"{HANDLERS / 'aws_region_reader.py'}:lambda_handler")
        assert runtime.memory_mb == 1024 and runtime.timeout == 900.0


def test_a_queue_hiding_a_message_for_less_than_the_timeout_is_refused_as_lambda_refuses_it():
    code, out, err = cli("--template", str(SQS), "--function", "TooShort", "--workers", "1", "--json")
    assert code == 2
    message = json.loads(out)["error"]
    assert "VisibilityTimeout 30 s, less than the function's Timeout 60 s" in message
    assert "services-sqs-configure" in message and "\n" not in message


@pytest.mark.parametrize("function, slow_answer_holds", [("LongNotifier", False), ("ShortNotifier", True)])
def test_sns_fifo_dedup_window_against_the_deployed_timeout(function, slow_answer_holds):
    """SNS FIFO drops a repeat of a deduplication id only within five minutes
    (https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html). With Timeout 900 a copy that
    starts while the publish's answer is slow publishes again 899 s later: delivered twice (breaks).
    With Timeout 30 the copy comes 29 s later and is dropped (holds). Same code, same template but
    the Timeout. Both functions break elsewhere since the check draws its delays from their documented
    ranges: S3's copy can come up to a minute plus the maximum event age later (3600 s here) and a
    retry of an event up to its maximum age, both past SNS's five minutes (`idem.explore.families.timings`). So
    the Timeout's effect is pinned where it is the only difference: the slow answer's schedule (measured:
    it is the one schedule of 175 whose verdict differs between the two functions)."""
    code, out, err = cli("--template", str(FIFO), "--function", function, "--effect", "sns:Publish",
                         "--workers", "1", "--json")
    report = json.loads(out)
    assert code == 1, err  # both: a copy past the five-minute window is published twice
    jsonschema.validate(report, json.loads((Path(__file__).parent.parent / "docs" / "check-report.schema.json").read_text()))
    assert report["deployed"]["timeout"] == (900 if function == "LongNotifier" else 30)
    assert {r["schedule"].rsplit("; ", 1)[1] for r in report["results"]} == {"1 retry"}  # the template's
    late = [r for r in report["results"] if "at its range's high end" in r["schedule"]]
    assert late and all(r["verdict"] == "double_effect" and r["effects"]["sns:Publish"] == 2 for r in late)
    slow = [r for r in report["results"]
            if "its answer in flight" in r["schedule"] and "a copy meanwhile" in r["schedule"]]
    assert slow and all(r["effects"]["sns:Publish"] == (1 if slow_answer_holds else 2) for r in slow)
    assert all(r["verdict"] == ("exactly_once" if slow_answer_holds else "double_effect") for r in slow)
    in_flight = [r for r in report["results"] if "its request in flight" in r["schedule"]]
    assert in_flight and all(r["verdict"] == "exactly_once" for r in in_flight)  # no publish yet: one


def test_the_report_header_states_the_deployed_settings():
    code, out, _ = cli("--template", str(FIFO), "--function", "ShortNotifier", "--effect", "sns:Publish",
                       "--workers", "1", "--retries", "0")
    assert code == 1  # it breaks (a copy of the event past SNS's five minutes): the header is stated either way
    assert ("as deployed (sns_fifo_deployed.yaml, function ShortNotifier): Timeout 30 s, MemorySize 1024 MB; "
            "MaximumRetryAttempts 1, MaximumEventAgeInSeconds 3600") in out


def test_explicit_retries_override_the_template_and_the_header_says_so():
    from idem.explore.target.deployed import Deployed

    batch = Deployed.of(_deployed(SQS, "Batch"))
    assert batch.retries("sqs") == (2,) and batch.sqs_mapping(2).max_receive_count == 5  # the template's
    assert batch.sqs_mapping(0).max_receive_count == 1  # --retries 0: maxReceiveCount 1
    assert batch.describe("sqs", (0,)).endswith("; the runs: --retries 0 (maxReceiveCount = retries + 1)")
    assert "the runs" not in batch.describe("sqs", (2,))
