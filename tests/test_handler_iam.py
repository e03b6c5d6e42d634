"""Every AWS call the handler to copy makes, across its scenarios, against the function's
role in template.yaml. moto does not enforce IAM, so this test records the calls (the local
runtime's boundary hooks count every AWS operation an invocation makes) and compares.

An S3 GetObject is authorised by one of two IAM actions, by its parameters: "If you include a
versionId in your request header, you must have the s3:GetObjectVersion permission ... The
s3:GetObject permission is not required in this scenario. If you request the current version of
an object without a specific versionId ... only the s3:GetObject permission is required"
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html). So the S3 calls are
recorded as the IAM action each one needs, not by the operation's name."""
from __future__ import annotations

import boto3
import pytest

from idem.core.handlers import keyed
from idem.deploy import template as tp
from idem.sim.faults import FaultPlan
from idem.sim.sessions import watched_session
from idem.sim.runtime import LocalLambda
from idem.sim.world import LocalWorld

HANDLER = "idem.core.handlers.keyed:lambda_handler"
DAY = 24 * 3600


def ops_of(runtime):
    return {name for attempt in runtime.attempts for name in attempt.calls}


def s3_actions_of(params: dict) -> str:
    """The IAM action a GetObject with these parameters needs (the docstring's rule)."""
    return "s3:GetObjectVersion" if params.get("VersionId") else "s3:GetObject"


def scenario_calls():
    """The calls of: a first delivery, a duplicate, a retry after a crash, a redrive after
    25 h of an upload charged before a crash, an event without eventTime, and a decline, in
    the production bucket (versioned); and one upload whose version is `null` (a bucket whose
    versioning was suspended: S3 gives new objects the version id null,
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/VersionSuspendedBehavior.html), which
    keyed reads by its eTag (IfMatch) instead. S3's calls are recorded as IAM actions."""
    read_as: list[str] = []

    def record(params=None, **_):
        read_as.append(s3_actions_of(params or {}))

    events = watched_session().events
    events.register("before-parameter-build.s3.GetObject", record, unique_id="test-iam-get-object")
    try:
        seen, outcomes, charges = _scenarios()
    finally:
        events.unregister("before-parameter-build.s3.GetObject", unique_id="test-iam-get-object")
    assert "s3:GetObject" in seen and read_as, "the scenarios read no order file"
    return {op for op in seen if not op.startswith("s3:")} | set(read_as), outcomes, charges


def _scenarios():
    seen, outcomes = set(), {}
    with LocalWorld(versioned=False, prefix="idem-null") as world:
        plain = LocalLambda(world, world.env(), handler=HANDLER)
        plain.send(world.event(world.upload("frank/unversioned.csv")))
        plain.run()
        outcomes["null version"] = [a.result["processed"][0]["status"] for a in plain.attempts]
        seen |= ops_of(plain)
    with LocalWorld() as world:
        runtime = LocalLambda(world, world.env(), handler=HANDLER)
        event = world.event(world.upload("alice/first.csv"))
        runtime.send(event)
        runtime.send(event)
        runtime.run()
        outcomes["first, duplicate"] = [a.result["processed"][0]["status"] for a in runtime.attempts]
        seen |= ops_of(runtime)

        retry = LocalLambda(world, world.env(), handler=HANDLER,
                            fault=FaultPlan.at_point("after_charge", "once", how="crash"))
        retry.send(world.event(world.upload("bob/retried.csv")))
        retry.run()
        outcomes["retry"] = [a.outcome for a in retry.attempts]
        seen |= ops_of(retry)

        dying = LocalLambda(world, world.env(), handler=HANDLER, retries=0,
                            fault=FaultPlan.at_point("after_charge", "always", how="crash"))
        late = world.event(world.upload("carol/redriven.csv"))
        dying.send(late)
        dying.run()
        world.clock.advance(DAY + 3600)
        redrive = LocalLambda(world, world.env(), handler=HANDLER)
        redrive.send(late)
        redrive.run()
        outcomes["redrive"] = [a.result["processed"][0]["status"] for a in redrive.attempts]
        seen |= ops_of(dying) | ops_of(redrive)

        timeless = world.event(world.upload("dave/no-time.csv"))
        del timeless["Records"][0]["eventTime"]
        plain = LocalLambda(world, world.env(), handler=HANDLER)
        plain.send(timeless)
        plain.run()
        outcomes["no eventTime"] = [a.result["processed"][0]["status"] for a in plain.attempts]
        seen |= ops_of(plain)
        declined = LocalLambda(world, world.env(), handler=HANDLER, fault=FaultPlan.at_point("declined", "once"))
        declined.send(world.event(world.upload("erin/declined.csv")))
        declined.run()
        outcomes["declined"] = [a.result["processed"][0]["status"] for a in declined.attempts]
        seen |= ops_of(declined)
        charges = len(world.provider().charges())
    return seen, outcomes, charges


def _production() -> dict:
    """template.yaml's production profile (the default), as CloudFormation would create it."""
    parameters = {"Profile": "prod"}
    return tp.resolve(tp.translate(tp.with_code(tp.load(), "code-bucket", "idem-core.zip"), parameters), parameters)


@pytest.fixture(scope="module")
def observed():
    return scenario_calls()


@pytest.fixture(scope="module")
def ledger_grants():
    return {action for action, resource in tp.granted(_production()) if resource == "LedgerTable"}


@pytest.fixture(scope="module")
def upload_grants():
    return {action for action, resource in tp.granted(_production()) if resource.startswith("UploadBucket")}


def ledger_calls(calls):
    return {op for op in calls if op.startswith("dynamodb:")}


def upload_calls(calls):
    return {op for op in calls if op.startswith("s3:")}


def test_the_scenarios_do_what_they_say(observed):
    _, outcomes, charges = observed
    assert outcomes == {"null version": ["charged"],
                        "first, duplicate": ["charged", "duplicate"], "retry": ["crash", "ok"],
                        "redrive": ["found"], "no eventTime": ["charged"], "declined": ["declined"]}
    assert charges == 4  # alice, bob, carol (once, found after 25 h), dave (frank's world is another)


def test_the_handler_reads_the_order_file_and_the_ledger_by_key_only(observed):
    """The ledger by key (no Scan, no Query: booked_day feeds the by_day index through the
    table's own write, which needs no grant on the index; GetItem reads who pays, the account's
    customer mapping), and the order file by its version (or, for a `null` version, by its
    eTag): nothing else."""
    calls, _, _ = observed
    assert calls == {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem", "s3:GetObjectVersion",
                     "s3:GetObject"}
    assert not any(op.endswith((":Scan", ":Query")) for op in calls)


def test_every_ledger_and_upload_call_is_granted(observed, ledger_grants, upload_grants):
    calls, _, _ = observed
    assert ledger_calls(calls) <= ledger_grants
    assert upload_calls(calls) <= upload_grants


def test_nothing_is_granted_on_the_ledger_or_the_uploads_that_the_handler_never_calls(
        observed, ledger_grants, upload_grants):
    calls, _, _ = observed
    assert ledger_grants == ledger_calls(calls), f"granted but never called: {sorted(ledger_grants - calls)}"
    assert upload_grants == upload_calls(calls), f"granted but never called: {sorted(upload_grants - calls)}"


def test_stripe_secret_is_read_with_ssm_get_parameter_only(monkeypatch):
    """make_provider's one AWS call at cold start: ssm:GetParameter (with decryption, so the
    role also needs kms:Decrypt on the parameter's key)."""
    made = []
    with LocalWorld():
        session = boto3.Session(region_name="us-east-1")
        session.events.register("before-call", lambda model, **_: made.append(
            f"{model.service_model.endpoint_prefix}:{model.name}"))
        session.client("ssm").put_parameter(Name="/idem/stripe", Value="sk_test_x", Type="SecureString")
        made.clear()
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
        monkeypatch.setenv("STRIPE_SECRET_PARAMETER", "/idem/stripe")
        provider = keyed.make_provider()  # inside idem: the adapter comes from the package
    assert type(provider).__name__ == "StripeProvider"
    assert made == ["ssm:GetParameter"]


def test_the_role_may_read_the_stripe_secret():
    assert any(action == "ssm:GetParameter" for action, _ in tp.granted(_production()))


def test_the_role_may_read_the_order_file():
    granted = {action for action, _ in tp.granted(_production())}
    assert {"s3:GetObject", "s3:GetObjectVersion"} <= granted
