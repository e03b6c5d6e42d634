"""Throughput measured, not assumed: the handler's time budget (keyed_settings, its bounded calls)
gives the function's timeout and the queue's visibility timeout (idem/core/buffer.py), Stripe's
rate limits give the copies (idem/deploy/throughput.py), and template.yaml carries both."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

from idem.cli import main
from idem.core import buffer
from idem.core.handlers import keyed_settings
from idem.deploy import template as tp
from idem.deploy import throughput


@pytest.fixture(scope="module")
def prod():
    expanded = tp.translate(tp.with_code(tp.load(), "b", "k"), {"AlarmEmail": "ops@example.com"})
    return tp.resolve(expanded, {"AlarmEmail": "ops@example.com"})


def _props(template, name):
    return template["Resources"][name]["Properties"]


def test_the_time_budget_per_upload_comes_from_the_handlers_bounded_calls():
    # each AWS call: 2 attempts of (0.5 s connect + 0.75 s read) and a backoff of at most 1 s
    assert keyed_settings.AWS_CALL_SECONDS == 3.5
    # 4 AWS calls and 3 Stripe calls of at most 4 s on the slowest path of a later upload
    assert keyed_settings.UPLOAD_PATH_SECONDS == 4 * 3.5 + 3 * 4.0 == 26.0
    assert buffer.batch_seconds(10, 1.5) == 3.5 + 9 * 1.5 + 26.0 == 43.0
    assert buffer.batch_seconds(10, buffer.DESIGN_UPLOAD_SECONDS) == 56.5
    assert buffer.timeout_for(10) == 60 == buffer.PROD.function_timeout_seconds


def test_the_template_carries_the_budgets_timeout_and_six_times_it_as_visibility(prod):
    charge = _props(prod, tp.FUNCTION)
    assert charge["Timeout"] == buffer.PROD.function_timeout_seconds == buffer.timeout_for(buffer.PROD.batch_size)
    assert charge["Environment"]["Variables"]["FUNCTION_TIMEOUT_SECONDS"] == str(charge["Timeout"])
    queue = _props(prod, "UploadQueue")
    # "at least six times the timeout": https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html
    assert queue["VisibilityTimeout"] == 6 * charge["Timeout"] == buffer.PROD.visibility_timeout_seconds
    assert queue["RedrivePolicy"]["maxReceiveCount"] * queue["VisibilityTimeout"] == 27_000  # 7.5 hours
    assert _props(prod, "ChargeFunctionUploads")["BatchSize"] == buffer.PROD.batch_size == 10


def charged_in_one_invocation(timeout: float, per_upload: float, cold: bool = True) -> int:
    """keyed's own rule (keyed.enough_time) on a virtual clock: after a cold start's secret, each
    upload after the first starts only while its slowest path still fits in the time left."""
    from idem.core.handlers.keyed import enough_time
    from idem.core.handlers.keyed_settings import WorkInProgress

    left = timeout - (keyed_settings.AWS_CALL_SECONDS if cold else 0.0)
    for n in range(10):
        if n:
            try:
                enough_time(int(left * 1000))
            except WorkInProgress:
                return n
        left -= per_upload
    return 10


@pytest.mark.parametrize("per_upload, charged", [(0.8, 10), (1.5, 10), (3.0, 10), (4.0, 8)])
def test_a_batch_of_ten_is_charged_within_one_invocation_at_stripes_usual_pace(per_upload, charged):
    assert charged_in_one_invocation(buffer.PROD.function_timeout_seconds, per_upload) == charged


def test_the_30_second_timeout_it_replaces_charged_three_of_ten_and_sent_the_rest_back():
    assert charged_in_one_invocation(30, 1.5, cold=False) == 3
    assert charged_in_one_invocation(30, 1.5, cold=True) == 1


def test_the_copies_follow_from_stripes_rate_limits(prod):
    # https://docs.stripe.com/rate-limits: live 100/s, sandbox 25/s, 25/s per endpoint
    assert throughput.copies_within_stripes_limits(throughput.FASTEST_UPLOAD_SECONDS) == 5
    assert throughput.copies_within_stripes_limits(throughput.FASTEST_UPLOAD_SECONDS, "sandbox") == 2
    assert throughput.copies_within_stripes_limits(1.5) == 37  # at the usual pace the endpoint allows more
    copies = _props(prod, "ChargeFunctionUploads")["ScalingConfig"]["MaximumConcurrency"]
    assert copies == _props(prod, tp.FUNCTION)["ReservedConcurrentExecutions"]
    assert copies == throughput.copies_within_stripes_limits(throughput.FASTEST_UPLOAD_SECONDS)
    # the copies' requests at Stripe's quickest stay under each limit
    rate = copies * throughput.uploads_per_second_per_copy(throughput.FASTEST_UPLOAD_SECONDS)
    assert rate * sum(throughput.STRIPE_REQUESTS.values()) <= 100 and rate <= 25


def test_idem_bench_reports_uploads_per_second_per_copy_and_the_copies_stripe_allows():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["bench", "--events", "4", "--rounds", "2", "--no-check", "--json",
                     "--handler", "keyed_stripe"]) == 0
    numbers = json.loads(out.getvalue())["throughput"]
    assert numbers["handler_seconds_per_upload"] > 0  # measured, not assumed
    per_copy = numbers["uploads_per_second_per_copy"]
    assert per_copy["usual"] < 1 / 1.5 < per_copy["fastest"] < 1 / 0.2
    assert numbers["copies_within_stripe_live"] <= 5 and numbers["copies_within_stripe_sandbox"] <= 2
    assert numbers["function_timeout_seconds"] == 60 and numbers["visibility_timeout_seconds"] == 360
    text = throughput.format_report(numbers)
    assert "uploads/s per unit of concurrency" in text and "https://docs.stripe.com/rate-limits" in text
