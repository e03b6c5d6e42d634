"""The scheduled reconciliation (idem/core/reconcile_job.py): windows, the two sides read from
moto, planted differences found, Stripe's list paged, and IAM: every boto3 call it makes is
granted by template.yaml's ReconcileFunctionRole in each profile, and nothing more."""
from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import pytest

from idem.core import reconcile_job as job
from idem.core.dynamo import to_item
from idem.deploy import template as tp
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld, fake_session

LAG = 21600 + job.MAX_INVOCATION_SECONDS


def test_the_window_is_whole_aligned_and_closes_a_lag_before_now():
    start, end = job.window(now=100_000.0, minutes=60, lag_seconds=LAG)
    assert (end - start, end % 3600) == (3600, 0)
    assert 100_000 - LAG - 3600 < end <= 100_000 - LAG


def _entry(charge_id: str, at: float, cents: int = 500) -> job.Entry:
    return job.Entry(charge_id, "alice", cents, at)


def test_a_charge_booked_by_a_late_retry_is_not_a_difference():
    start, end = 36_000.0, 39_600.0
    charge = _entry("ch_1", end - 1)  # charged in the last second of the window ...
    line = _entry("ch_1", end + 600)  # ... booked by a retry ten minutes after it closed
    assert job.compare([line], [charge], start, end).differences == 0
    early = _entry("ch_2", start - 600)  # charged before the window, booked inside it
    assert job.compare([_entry("ch_2", start + 5)], [early], start, end).differences == 0


def test_each_kind_of_difference_is_reported_once():
    start, end = 36_000.0, 39_600.0
    lines = [_entry("ch_1", start + 1), _entry("ch_2", start + 2, cents=400), _entry("ch_9", start + 9)]
    charges = [_entry("ch_1", start), _entry("ch_2", start + 1), _entry("ch_3", start + 3)]
    report = job.compare(lines, charges, start, end)
    assert [e.charge_id for e in report.unbooked] == ["ch_3"]
    assert [e.charge_id for e in report.uncharged] == ["ch_9"]
    assert report.amount_mismatches == [{"charge_id": "ch_2", "ledger_cents": 400, "provider_cents": 500}]
    assert report.differences == 3


# -- on moto: the stand-in provider (the demo profile) ---------------------------------------
def _record_calls(session: Any) -> list[tuple[str, str, dict]]:
    seen: list[tuple[str, str, dict]] = []

    def note(params: dict, model: Any, **_: Any) -> None:
        seen.append((model.service_model.signing_name, model.name, dict(params)))

    session.events.register("before-parameter-build", note)
    return seen


def _iam(call: tuple[str, str, dict], names: dict[str, str]) -> tuple[str, str]:
    """One recorded call as (IAM action, the resource label template.yaml's role uses)."""
    service, operation, params = call
    if service == "dynamodb":
        table = names[params["TableName"]]
        return (f"dynamodb:{operation}", f"{table}/index/{params['IndexName']}"
                if params.get("IndexName") else table)
    if service == "s3":
        return (f"s3:{operation}", f"{names[params['Bucket']]}/{params['Key'].split('/')[0]}/*")
    if service == "ssm":
        return (f"ssm:{operation}", f"parameter:{names[params['Name']]}")
    raise AssertionError(f"unexpected call {service}:{operation}")


#: What Lambda itself does with the role (logs, a failed run's record to its failure queue),
#: and X-Ray's daemon when tracing is on.
SERVICE_GRANTS = {("logs:CreateLogStream", "ReconcileFunctionLogs"),
                  ("logs:PutLogEvents", "ReconcileFunctionLogs"),
                  ("sqs:SendMessage", "ReconcileFailureQueue"),
                  ("xray:PutTraceSegments", "*"), ("xray:PutTelemetryRecords", "*")}


@pytest.fixture
def stand_in():
    """A keyed world with two orders charged and booked, and a report bucket."""
    with LocalWorld(prefix="reconcile-job") as world:
        runtime = LocalLambda(world, world.env("keyed"))
        for n in (1, 2):
            runtime.send(world.event(world.upload(f"alice/order-{n}.txt")))
        runtime.run()
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        env = {"LEDGER_TABLE": world.ledger_table, "PROVIDER_TABLE": world.provider_table,
               "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60", "MAX_EVENT_AGE_SECONDS": "21600",
               "AWS_LAMBDA_FUNCTION_NAME": "idem-reconcile"}
        yield world, env
        for item in world.s3.list_objects_v2(Bucket=reports).get("Contents", []):
            world.s3.delete_object(Bucket=reports, Key=item["Key"])
        world.s3.delete_bucket(Bucket=reports)


def _now_covering(world: LocalWorld) -> float:
    """A moment whose window holds the world's clock now."""
    return world.clock.now() + LAG + 3600


def test_a_clean_window_writes_its_report_and_metrics(stand_in):
    world, env = stand_in
    printed: list[str] = []
    report = job.run(env, fake_session(), _now_covering(world), say=printed.append)
    assert (report.ledger_lines, report.provider_charges, report.differences) == (2, 2, 0)
    body = json.loads(world.s3.get_object(Bucket=env["REPORT_BUCKET"], Key=report.key())["Body"].read())
    assert body["differences"] == 0 and body["window"] == f"{job.iso(report.start)}/{job.iso(report.end)}"
    (line,) = printed
    metrics = json.loads(line)
    directive = metrics["_aws"]["CloudWatchMetrics"][0]
    assert (directive["Namespace"], directive["Dimensions"]) == ("Idem", [["FunctionName"]])
    assert metrics["FunctionName"] == "idem-reconcile" and metrics["Differences"] == 0


def test_planted_differences_are_found_and_counted_in_the_metric(stand_in):
    world, env = stand_in
    # Money moved with no ledger line: a charge made outside the handler.
    world.provider().charge(customer="bob", amount=700, currency="usd", reference="s3://elsewhere/x")
    # A ledger line whose charge the provider never made.
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({
        "pk": "charge#planted", "status": "done", "account": "carol", "cents": 500,
        "charge_id": "ch_999999", "booked_at": world.clock.now()}))
    printed: list[str] = []
    report = job.run(env, fake_session(), _now_covering(world), say=printed.append)
    assert [(e.charge_id, e.account, e.cents) for e in report.unbooked] == [("ch_000003", "bob", 700)]
    assert [(e.charge_id, e.account) for e in report.uncharged] == [("ch_999999", "carol")]
    assert json.loads(printed[0])["Differences"] == 2


@pytest.mark.parametrize("profile", ["demo", "prod"])
def test_every_call_the_reconciler_makes_is_granted_and_nothing_more(stand_in, profile, monkeypatch):
    world, env = stand_in
    session = fake_session()
    names = {world.ledger_table: "LedgerTable", world.provider_table: "ProviderTable",
             env["REPORT_BUCKET"]: "ReportBucket", "/idem/stripe/secret-key": "StripeSecretParameter"}
    if profile == "prod":
        ssm = session.client("ssm")
        ssm.put_parameter(Name="/idem/stripe/secret-key", Value="sk_test_x", Type="SecureString")
        env = {**env, "STRIPE_SECRET_PARAMETER": "/idem/stripe/secret-key"}
        env.pop("PROVIDER_TABLE")
    calls = _record_calls(session)
    job.run(env, session, _now_covering(world), say=lambda line: None,
            fetch=lambda request: {"data": [], "has_more": False})
    used = {_iam(call, names) for call in calls}
    cfn = tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k")), {"Profile": profile})
    granted = tp.role_grants(cfn, "ReconcileFunctionRole")
    assert used <= granted, f"calls the role does not allow: {used - granted}"
    assert granted - used <= SERVICE_GRANTS, f"grants nothing uses: {granted - used - SERVICE_GRANTS}"
    if profile == "prod":
        session.client("ssm").delete_parameter(Name="/idem/stripe/secret-key")


# -- Stripe's list ------------------------------------------------------------------------------
def test_stripe_charges_pages_on_keeps_succeeded_ones_and_authenticates_with_the_key():
    pages = [
        {"data": [{"id": "pi_a", "status": "succeeded", "amount": 500, "amount_received": 500,
                   "created": 10, "metadata": {"account": "alice"}, "customer": "cus_1"},
                  {"id": "pi_b", "status": "requires_payment_method", "amount": 500, "created": 11}],
         "has_more": True},
        {"data": [{"id": "pi_c", "status": "succeeded", "amount": 300, "created": 12,
                   "metadata": {}, "customer": "cus_2"}], "has_more": False},
    ]
    asked: list[Any] = []

    def fetch(request):
        asked.append(request)
        return pages[len(asked) - 1]

    found = job.stripe_charges("sk_test_123", 0, 3600, fetch)
    assert [(e.charge_id, e.account, e.cents) for e in found] == [("pi_a", "alice", 500),
                                                                  ("pi_c", "cus_2", 300)]
    first, second = (urllib.parse.parse_qs(urllib.parse.urlparse(r.full_url).query) for r in asked)
    assert first == {"created[gte]": ["0"], "created[lt]": ["3600"], "limit": ["100"]}
    assert second["starting_after"] == ["pi_b"]
    assert asked[0].full_url.startswith("https://api.stripe.com/v1/payment_intents?")  # the ids keyed books
    token = asked[0].get_header("Authorization").removeprefix("Basic ")
    assert base64.b64decode(token) == b"sk_test_123:"


def test_a_missing_setting_names_itself():
    with pytest.raises(RuntimeError, match="REPORT_BUCKET, PROVIDER_TABLE or STRIPE_SECRET_PARAMETER"):
        job.run({"LEDGER_TABLE": "t"}, fake_session(), 0.0)
