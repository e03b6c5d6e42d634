"""Each deployed function's calls, run under its own role's policy with IAM enforced by
moto (idem/deploy/aws_rules/enforced.py): the role template.yaml gives it is enough, and a role with
one statement less is refused with AccessDenied, so the enforcement is real."""
from __future__ import annotations

import copy

import pytest
from botocore.exceptions import ClientError

from idem.core.reconcile import job as reconcile_job
from idem.deploy.aws_rules import enforced
from idem.deploy import template as tp
from idem.sim.runtime import LocalLambda, on_clock
from idem.sim.world import LocalWorld, fake_client

HANDLER = "idem.core.handlers.keyed:lambda_handler"
PROD = {"Profile": "prod", "AlarmEmail": "ops@example.com"}


@pytest.fixture(scope="module")
def prod():
    return tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), PROD), PROD)


def _charge_once(cfn, role_name):
    """An upload and its duplicate through the keyed handler, the function's session signed
    as the role; returns the attempts' outcomes and the errors they raised."""
    with LocalWorld(prefix="iam") as world:
        docs = enforced.role_documents(cfn, "ChargeFunctionRole",
                                       {"LedgerTable": world.ledger_table, "UploadBucket": world.bucket})
        with enforced.enforced_role(fake_client("iam"), fake_client("sts"), role_name, docs) as creds:
            world.function_session = lambda: enforced.RoleSession(creds)
            runtime = LocalLambda(world, world.env(), handler=HANDLER, retries=0)
            event = world.event(world.upload("alice/order-1.json",
                                             body=b'{"order_id": "A-1", "amount_cents": 500}'))
            runtime.send(event)
            runtime.send(event)
            runtime.run()
        return [a.outcome for a in runtime.attempts], [str(a.error) for a in runtime.attempts if a.error]


def _without(cfn, role, sid):
    broken = copy.deepcopy(cfn)
    statements = broken["Resources"][role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    statements[:] = [s for s in statements if s.get("Sid") != sid]
    return broken


def test_the_charge_function_runs_under_its_own_role(prod):
    outcomes, errors = _charge_once(prod, "charge-role")
    assert errors == [] and outcomes == ["ok", "ok"]


def test_the_charge_function_without_its_ledger_grant_is_refused(prod):
    outcomes, errors = _charge_once(_without(prod, "ChargeFunctionRole", "Ledger"), "charge-role-no-ledger")
    assert errors and all("AccessDenied" in e for e in errors), errors


def test_a_call_signed_as_the_role_outside_its_grants_is_refused(prod):
    with LocalWorld(prefix="iamx") as world:
        docs = enforced.role_documents(prod, "ChargeFunctionRole",
                                       {"LedgerTable": world.ledger_table, "UploadBucket": world.bucket})
        with enforced.enforced_role(fake_client("iam"), fake_client("sts"), "charge-role-x", docs) as creds:
            session = enforced.RoleSession(creds)
            with pytest.raises(ClientError, match="AccessDenied"):
                session.client("dynamodb").scan(TableName=world.ledger_table)
            with pytest.raises(ClientError, match="AccessDenied"):
                session.client("dynamodb").put_item(TableName=world.provider_table, Item={"pk": {"S": "x"}})
            world.dynamodb.scan(TableName=world.ledger_table)  # the workbook's own calls are not the role's


def test_the_charge_role_reads_but_never_writes_the_customer_mapping(prod):
    """Who pays is written only by the runbook: the prod role's explicit Deny on `account#`
    partition keys (dynamodb:LeadingKeys) refuses a put, an update and a delete of one, and
    its GetItem reads it."""
    with LocalWorld(prefix="iamcus") as world:
        world.link_demo_account("alice")
        docs = enforced.role_documents(prod, "ChargeFunctionRole",
                                       {"LedgerTable": world.ledger_table, "UploadBucket": world.bucket})
        with enforced.enforced_role(fake_client("iam"), fake_client("sts"), "charge-role-cus", docs) as creds:
            dynamodb = enforced.RoleSession(creds).client("dynamodb")
            key = {"pk": {"S": "account#alice"}}
            assert dynamodb.get_item(TableName=world.ledger_table, Key=key, ConsistentRead=True)["Item"]
            for call in (lambda: dynamodb.put_item(TableName=world.ledger_table,
                                                   Item={**key, "customer": {"S": "cus_mallory"}}),
                         lambda: dynamodb.update_item(TableName=world.ledger_table, Key=key,
                                                      UpdateExpression="SET customer = :c",
                                                      ExpressionAttributeValues={":c": {"S": "cus_mallory"}}),
                         lambda: dynamodb.delete_item(TableName=world.ledger_table, Key=key)):
                with pytest.raises(ClientError, match="AccessDenied"):
                    call()
            dynamodb.put_item(TableName=world.ledger_table, Item={"pk": {"S": "charge#x"}})  # its own records: yes
        item = world.dynamodb.get_item(TableName=world.ledger_table, Key=key)["Item"]
        assert item["customer"] == {"S": "alice"}


DEMO = {"Profile": "demo", "HandlerMode": "keyed"}
LAG = 21600 + reconcile_job.MAX_INVOCATION_SECONDS


@pytest.fixture(scope="module")
def demo():
    return tp.resolve(tp.translate(tp.with_code(tp.load(), "b", "k"), DEMO), DEMO)


def _reconcile(cfn, role_name):
    """One reconciliation window over two charged orders, the job's session signed as the
    role (demo: the stand-in provider's table). Returns its report's differences, or the error."""
    with LocalWorld(prefix="iamrec") as world:
        runtime = LocalLambda(world, world.env("keyed"))
        for n in (1, 2):
            runtime.send(world.event(world.upload(f"alice/order-{n}.json",
                                                  body=b'{"order_id": "R-%d", "amount_cents": 500}' % n)))
        runtime.run()
        # keyed's commit writes booked_day, so the migration for older ledgers has nothing to do
        assert reconcile_job.backfill_booked_day(world.dynamodb, world.ledger_table) == 0
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        env = {"LEDGER_TABLE": world.ledger_table, "PROVIDER_TABLE": world.provider_table,
               "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60", "MAX_EVENT_AGE_SECONDS": "21600",
               "AWS_LAMBDA_FUNCTION_NAME": "idem-reconcile", "UPLOAD_BUCKET": world.bucket,
               "ORDER_IDENTITY": "upload", "STACK_NAME": "iamrec"}
        docs = enforced.role_documents(cfn, "ReconcileFunctionRole", {
            "LedgerTable": world.ledger_table, "ProviderTable": world.provider_table, "ReportBucket": reports,
            "UploadBucket": world.bucket})
        with enforced.enforced_role(fake_client("iam"), fake_client("sts"), role_name, docs) as creds:
            try:
                report = reconcile_job.run(env, enforced.RoleSession(creds), world.clock.now() + LAG + 3600,
                                           say=lambda line: None)
                return report.differences
            except ClientError as error:
                return error.response["Error"]["Code"]


def test_the_reconciler_runs_under_its_own_role(demo):
    assert _reconcile(demo, "reconcile-role") == 0


def test_the_reconciler_without_its_reports_grant_is_refused(demo):
    assert _reconcile(_without(demo, "ReconcileFunctionRole", "Reports"), "reconcile-role-no-reports") == "AccessDenied"


def _reconcile_prod(cfn, role_name, inventory: bool):
    """One prod reconciliation window under the prod role: the Stripe key from SSM, Stripe's
    search stubbed (no network), the uploads listed, or (`inventory`) past the listing limit
    read from the upload bucket's S3 Inventory as template.yaml delivers it. Its differences,
    or the error code."""
    from unittest import mock

    from test_reconcile_job import plant_inventory

    with LocalWorld(prefix="iamprod") as world:
        runtime = LocalLambda(world, world.env("keyed"))
        for n in (1, 2):
            with on_clock(world.clock):  # LastModified on the virtual clock, inside the window
                uploaded = world.upload(f"alice/order-{n}.json", body=b'{"order_id": "P-%d", "amount_cents": 500}' % n)
            runtime.send(world.event(uploaded))
        runtime.run()
        reports = f"{world.prefix}-reports"
        world.s3.create_bucket(Bucket=reports)
        ssm = world.session.client("ssm")
        ssm.put_parameter(Name="/idem/stripe/secret-key", Value="sk_test_x", Type="SecureString")
        now = world.clock.now() + LAG + 3600
        env = {"LEDGER_TABLE": world.ledger_table, "STRIPE_SECRET_PARAMETER": "/idem/stripe/secret-key",
               "REPORT_BUCKET": reports, "WINDOW_MINUTES": "60", "MAX_EVENT_AGE_SECONDS": "21600",
               "AWS_LAMBDA_FUNCTION_NAME": "idem-reconcile", "UPLOAD_BUCKET": world.bucket,
               "ORDER_IDENTITY": "order-id", "STACK_NAME": "iamprod",
               "UPLOAD_INVENTORY": f"{reports}/inventory/{world.bucket}/uploads/"}
        if inventory:
            plant_inventory(world, reports, now)
        docs = enforced.role_documents(cfn, "ReconcileFunctionRole", {
            "LedgerTable": world.ledger_table, "ReportBucket": reports, "UploadBucket": world.bucket})
        try:
            with enforced.enforced_role(fake_client("iam"), fake_client("sts"), role_name, docs) as creds, \
                    mock.patch.object(reconcile_job, "MAX_LISTED_VERSIONS", 1 if inventory else 200_000):
                report = reconcile_job.run(env, enforced.RoleSession(creds), now, say=lambda line: None,
                                           fetch=lambda request: {"data": [], "has_more": False})
                return report.uploads, report.differences
        except ClientError as error:
            return error.response["Error"]["Code"]
        finally:
            ssm.delete_parameter(Name="/idem/stripe/secret-key")


@pytest.mark.parametrize("inventory", [False, True], ids=["listed", "inventory"])
def test_the_prod_reconciler_runs_under_its_own_role(prod, inventory):
    # two uploads, their lines, and no charge at the (stubbed) Stripe: two lines with no charge
    assert _reconcile_prod(prod, f"reconcile-prod-{inventory}", inventory) == (2, 2)


def test_the_prod_reconciler_without_its_inventory_grant_is_refused(prod):
    broken = _without(prod, "ReconcileFunctionRole", "InventoryFiles")
    assert _reconcile_prod(broken, "reconcile-prod-no-inventory", True) == "AccessDenied"
