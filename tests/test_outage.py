"""A 6-hour provider outage under steady uploads (idem/explore/outage.py), on the virtual clock:
prod's S3 -> SQS -> Lambda rides it out with every order charged once; S3's direct asynchronous
invocation parks the outage's orders in the failure queue. Uploads every 10 minutes here (the
module's default is one a minute; the rate does not change who survives, only the run time). The
buffer's sizes are template.yaml's (the last test compares)."""
from __future__ import annotations

import pytest

from idem.core.buffer import PROD, BufferSizing
from idem.explore.outage import run_outage


def test_the_sqs_buffer_rides_out_a_six_hour_outage_every_order_charged_exactly_once():
    result = run_outage("sqs", before_hours=1, outage_hours=6, after_hours=1, every_seconds=600)
    assert result.orders == 48
    assert (result.charged_once, result.charged_twice, result.not_charged, result.parked) == (48, 0, 0, 0)
    assert result.refused > result.orders  # the outage was real: each waiting order was refused again and again
    assert 0 < result.drain_seconds <= PROD.visibility_timeout_seconds + PROD.function_timeout_seconds
    assert result.holds
    assert "48 charged once, 0 twice, 0 not charged, 0 parked in the dead-letter queue" in result.render()
    assert f"the last waiting order charged {result.drain_seconds:.0f} s after it recovered" in result.render()


def test_s3s_direct_invocation_parks_the_outages_orders_in_the_failure_queue_on_purpose():
    result = run_outage("s3", before_hours=1, outage_hours=6, after_hours=1, every_seconds=600)
    # every order that arrived during the outage (none arrived in its last 3 minutes, whose retries
    # would have come after it)
    assert result.parked == result.not_charged == 36
    assert result.charged_twice == 0 and result.charged_once == 12
    assert not result.holds


def test_a_queue_whose_retries_end_before_the_outage_does_parks_orders_in_the_dead_letter_queue():
    short = BufferSizing(visibility_timeout_seconds=600, max_receive_count=6)  # 50 minutes of retries
    result = run_outage("sqs", before_hours=0, outage_hours=6, after_hours=0.5, every_seconds=1800, sizing=short)
    assert result.parked > 0 and result.parked == result.not_charged and result.charged_twice == 0


def test_the_prod_sizing_outlasts_six_hours_and_fits_the_queue_retention():
    assert PROD.rides_out_seconds > 6 * 3600
    assert PROD.retention_seconds > PROD.rides_out_seconds
    with pytest.raises(ValueError, match="six times"):
        BufferSizing(visibility_timeout_seconds=60)


def test_the_template_carries_the_buffer_sizes():
    from idem.deploy import template as tp

    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": "prod", "AlarmEmail": "a@b.c"})
    resources = cfn["Resources"]
    queue = resources["UploadQueue"]["Properties"]
    assert (queue["VisibilityTimeout"], queue["MessageRetentionPeriod"], queue["RedrivePolicy"]["maxReceiveCount"]) == (
        PROD.visibility_timeout_seconds, PROD.retention_seconds, PROD.max_receive_count)
    assert resources["FailureQueue"]["Properties"]["MessageRetentionPeriod"] == PROD.dead_letter_retention_seconds
    (mapping,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert mapping["BatchSize"] == PROD.batch_size and mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    charge = resources["ChargeFunction"]["Properties"]
    assert charge["Timeout"] == PROD.function_timeout_seconds
    reconciler = resources["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
    assert int(reconciler["RECONCILE_LAG_SECONDS"]) == PROD.reconcile_lag_seconds
