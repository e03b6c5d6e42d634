"""A queue fed by an SNS topic that the bucket notifies (S3 -> SNS -> SQS -> Lambda): each SQS body is
SNS's envelope around S3's event, unless the subscription sets RawMessageDelivery true
(docs/check_from_a_template.md, P24). Handlers in tests/handlers/, the template in
tests/templates/sns_fanout.yaml."""
from __future__ import annotations

import json
import re
from pathlib import Path

from check_cli import cli, target

TEMPLATE = str(Path(__file__).parent / "templates" / "sns_fanout.yaml")


def check(monkeypatch, *args: str, families: str, retries: str = "0") -> tuple[int, str, str]:
    """The CLI on the named families only (IDEM_CHECK_FAMILIES), one retry setting, one worker."""
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", families)
    return cli(*args, "--retries", retries, "--workers", "1")


def verdicts(out: str) -> dict[str, int]:
    return {name: int(n) for name, n in re.findall(r"^  ([a-z_]+) +(\d+)", out, flags=re.M)}


def test_the_template_reader_finds_the_topic_that_feeds_the_functions_queue_and_its_raw_setting():
    from idem.explore.target.deployed import Deployed
    from idem.explore.target.template_function import read

    enveloped = Deployed.of(read(TEMPLATE, "Charge").deployed)
    assert enveloped.sns_topic == "idem-check-Orders" and not enveloped.raw_message_delivery
    header = enveloped.describe("sqs")
    assert "through SNS topic idem-check-Orders" in header and "RawMessageDelivery off" in header, header
    assert "bucket idem-check-uploads" in header, header
    raw = Deployed.of(read(TEMPLATE, "RawKeyed").deployed)
    assert raw.sns_topic == "idem-check-Orders" and raw.raw_message_delivery
    assert "RawMessageDelivery true" in raw.describe("sqs"), raw.describe("sqs")
    # a queue no topic feeds: as before
    plain = Deployed.of(read(str(Path(TEMPLATE).parent / "adversary_sqs.yaml"), "NoReport").deployed)
    assert plain.sns_topic == "" and "SNS" not in plain.describe("sqs")


def test_snss_envelope_holds_s3s_event_as_a_string_with_the_fields_sns_documents():
    from idem.sim.triggers import SnsTopic

    topic = SnsTopic("orders")
    event = json.dumps({"Records": [{"s3": {"object": {"key": "a/b.json"}}}]})
    body = json.loads(topic.body(event, "s3://bucket/a/b.json#1", 1_767_225_600.0))
    assert body["Type"] == "Notification" and body["Message"] == event
    assert body["TopicArn"] == "arn:aws:sns:us-east-1:123456789012:orders"
    assert body["Timestamp"] == "2026-01-01T00:00:00.000Z"
    assert {"MessageId", "SignatureVersion", "Signature", "SigningCertURL", "UnsubscribeURL"} <= set(body)
    again = json.loads(topic.body(event, "s3://bucket/a/b.json#1", 1_767_225_600.0))
    assert again["MessageId"] != body["MessageId"]  # a second publish is a message of its own
    assert json.loads(SnsTopic("orders").body(event, "s3://bucket/a/b.json#1", 1_767_225_600.0)) == body  # the same every run
    assert SnsTopic("orders", raw_message_delivery=True).body(event, "x", 0.0) == event


def test_a_handler_that_skips_bodies_without_records_loses_every_order_behind_the_topic(monkeypatch):
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "SkipsTest", families="runs")
    assert code == 1 and "silent_loss" in out, (out + err)[-3000:]
    assert "through SNS topic idem-check-Orders" in out, out[:3000]


def test_the_same_handler_holds_where_the_bucket_notifies_the_queue_itself(monkeypatch):
    code, out, err = check(monkeypatch, target("sqs_skips_test_event"), "--trigger", "sqs", families="runs")
    assert code == 0 and "SNS" not in out, (out + err)[-3000:]


def test_a_handler_reading_the_envelopes_message_holds_behind_the_topic(monkeypatch):
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "Charge", families="runs,names")
    assert code == 0 and verdicts(out).get("exactly_once"), (out + err)[-3000:]
    assert "through SNS topic idem-check-Orders" in out, out[:3000]


def test_with_raw_message_delivery_the_body_is_s3s_event_itself(monkeypatch):
    code, out, err = check(monkeypatch, "--template", TEMPLATE, "--function", "RawKeyed", families="runs")
    assert code == 0 and "RawMessageDelivery true" in out, (out + err)[-3000:]
