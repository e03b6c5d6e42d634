"""What the handler to copy tells its operator: one JSON object a line (request id, key,
account, outcome), one CloudWatch Embedded Metric Format document per invocation, and never
a secret, a card detail or an object's body."""
from __future__ import annotations

import json
import logging

import pytest

from idem.core.handlers import keyed, keyed_events
from idem.core import order_csv
from idem.sim.faults import FaultPlan
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

HANDLER = "idem.core.handlers.keyed:lambda_handler"
BODY = b"amount_cents\n1234\nSECRET-CARD-4242424242424242\n"


def run(world, event, fault=None, retries=0):
    runtime = LocalLambda(world, world.env(), handler=HANDLER, fault=fault, retries=retries)
    runtime.send(event)
    runtime.run()
    return runtime


def parsed(runtime):
    lines = [line for a in runtime.attempts for line in a.logs]
    return [json.loads(line) for line in lines], lines  # every line is one JSON object


def emf_documents(objects):
    return [o for o in objects if "_aws" in o]


def validate_emf(doc):
    """The format's rules (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html)."""
    meta = doc["_aws"]
    assert isinstance(meta["Timestamp"], int) and meta["Timestamp"] > 1_700_000_000_000  # epoch ms
    for directive in meta["CloudWatchMetrics"]:
        assert isinstance(directive["Namespace"], str) and directive["Namespace"]
        assert len(directive["Metrics"]) <= 100
        for dimension_set in directive["Dimensions"]:
            assert len(dimension_set) <= 30
            for name in dimension_set:  # every target on the root, a dimension's value a string
                assert isinstance(doc[name], str) and len(doc[name]) <= 1024
        for metric in directive["Metrics"]:
            assert isinstance(doc[metric["Name"]], (int, float)) and not isinstance(doc[metric["Name"]], bool)
            assert metric.get("Unit", "None") == "Count"


@pytest.fixture
def world():
    with LocalWorld() as w:
        yield w


def test_each_upload_logs_one_json_line_with_request_key_account_and_outcome(world):
    obj = world.upload("alice/order.json")  # an order file: {"order_id": "order-00001"}
    event = world.event(obj)
    runtime = LocalLambda(world, world.env(), handler=HANDLER)
    runtime.send(event)
    runtime.send(event)
    runtime.run()
    objects, _ = parsed(runtime)
    uploads = [o for o in objects if o.get("idempotency_key")]
    assert [o["outcome"] for o in uploads] == ["charged", "duplicate"]
    key = keyed.identify(keyed.Upload.of(obj), "order-id", world.s3).idempotency_key  # the order's key
    for line, attempt in zip(uploads, runtime.attempts):
        assert line["request_id"] == attempt.request_id and line["idempotency_key"] == key
        assert line["account"] == "alice" and line["level"] == "INFO"
        assert {"timestamp", "message", "logger"} <= set(line)


@pytest.mark.parametrize("fault, outcome", [
    (None, "charged"), (FaultPlan.at_point("declined", "once"), "declined"),
    (FaultPlan.at_point("provider_500", "once"), "needs_attention"),
    (FaultPlan.at_point("provider_down", "once"), "failed")])
def test_each_invocation_prints_one_valid_metric_document_counting_its_outcome(world, fault, outcome):
    runtime = run(world, world.event(world.upload("alice/order.csv")), fault)
    objects, _ = parsed(runtime)
    (doc,) = emf_documents(objects)
    validate_emf(doc)
    counted = {name: doc[name] for name in keyed_events.OUTCOMES}
    assert counted == {name: int(name == outcome) for name in keyed_events.OUTCOMES}
    assert set(keyed_events.OUTCOMES) >= {"charged", "duplicate", "declined", "needs_attention",
                                   "work_in_progress", "lost_ownership"}


def test_a_live_lease_counts_as_work_in_progress(world):
    obj = world.upload("alice/order.csv")
    upload = keyed.Upload.of(obj)
    ledger = keyed.KeyedLedger(world.dynamodb, world.ledger_table, now=world.clock.now)
    key = keyed.identify(upload, "order-id", world.s3).idempotency_key
    assert ledger.claim(key, "someone-else", world.clock.now() + 600).won
    objects, _ = parsed(run(world, world.event(obj)))
    (doc,) = emf_documents(objects)
    assert doc["work_in_progress"] == 1 and doc["charged"] == 0


def test_no_secret_card_or_body_reaches_a_log_line(world, monkeypatch):
    runtime = run(world, world.event(world.upload("alice/order.csv", BODY)),
                  FaultPlan.at_point("declined", "once"))
    _, lines = parsed(runtime)
    text = "\n".join(lines)
    for secret in ("SECRET-CARD", "4242424242424242", "amount_cents\n1234", "sk_test", "sk_live"):
        assert secret not in text
    assert all(len(line) < 2_000 for line in lines)


def test_an_unreadable_record_fails_the_invocation_after_the_good_one(world):
    good = world.event(world.upload("alice/order.csv"))["Records"][0]
    runtime = run(world, {"Records": [good, {"eventSource": "aws:s3", "eventVersion": "2.1"}]})
    assert [a.outcome for a in runtime.attempts] == ["error"]
    assert "RecordsFailed" in runtime.attempts[0].error
    assert len(world.provider().charges()) == 1 and world.failure_queue_depth() == 1
    objects, _ = parsed(runtime)
    assert any(o.get("outcome") == "malformed" and o["level"] == "ERROR" for o in objects)


def test_a_malformed_order_needs_attention_and_is_never_charged(world):
    good = world.upload("alice/good.json", b'{"order_id": "A-1", "amount_cents": 750}')
    bad = world.upload("bob/bad.json", b"oops")
    charge = keyed.KeyedCharger(world.dynamodb, world.provider(), keyed.Settings(world.ledger_table),
                                now=world.clock.now, s3=world.s3)
    assert charge.charge_once(keyed.Upload.of(good), 30_000)["amount_cents"] == 750
    with pytest.raises(keyed.NeedsAttention, match="names no order this function can charge"):
        charge.charge_once(keyed.Upload.of(bad), 30_000)
    assert [c.amount for c in world.provider().charges()] == [750]
    record = world.ledger().get_record(keyed.Upload.of(bad).idempotency_key)
    assert record.status is keyed.Status.NEEDS_ATTENTION and not record.expires_at


def test_the_order_is_read_by_its_version_so_a_retry_reads_the_same_bytes(world):
    first = world.upload("alice/order.csv", b"amount_cents\n100\n")
    world.upload("alice/order.csv", b"amount_cents\n999\n")  # overwritten since: a new version
    assert order_csv.amount_from_order_file(keyed.Upload.of(first), world.s3) == 100


def test_an_overwritten_unversioned_order_needs_attention():
    with LocalWorld(versioned=False) as world:
        first = world.upload("alice/order.csv", b"amount_cents\n100\n")
        world.upload("alice/order.csv", b"amount_cents\n999\n")
        with pytest.raises(keyed.NeedsAttention, match="gone or was overwritten"):
            order_csv.amount_from_order_file(keyed.Upload.of(first), world.s3)


def test_a_log_line_carries_the_handlers_clock_not_the_machines(capsys):
    """Driven through the entry point (as chapter 06's zombie is), the charger logs on the
    virtual clock: the stalled invocation's warning is 45 s after the start, on 2026-01-01."""
    from idem.lessons.scribes import leases

    leases.zombie("keyed", pause=45)
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines() if text.startswith("{")]
    assert line["message"].startswith("lost ownership") and line["timestamp"] == "2026-01-01T00:00:45Z"
    record = logging.LogRecord("keyed", logging.INFO, "", 0, "m", None, None)
    assert json.loads(keyed_events.JsonLines().format(record))["timestamp"] == keyed_events.utc(record.created)
