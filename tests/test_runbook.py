"""`python -m idem settle` and `refund` on a local stack: a CloudFormation stack on moto (its
LedgerTableName output, its StripeSecretParameter parameter), the key in SSM, and the loopback
Stripe (idem/sim/stripe_server.py) behind STRIPE_API_BASE. Dry run first, --yes to act; bad input
is one line and exit code 2, with nothing changed."""
from __future__ import annotations

import json

import pytest
import stripe

from idem.core import runbook
from idem.core.dynamo import from_item, to_item
from idem.sim.stripe_server import loopback_stripe
from idem.sim.world import LocalWorld
from test_deploy_server import machine_free_aws_env, one_error_line, run_cli

STACK = "idem-runbook"
KEY = "charge#order#" + "a" * 64
SECRET = "/idem/runbook/stripe-key"


@pytest.fixture
def stack(monkeypatch, tmp_path):
    machine_free_aws_env(monkeypatch, tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    with LocalWorld(prefix="runbook") as world, loopback_stripe(world) as server:
        monkeypatch.setenv("STRIPE_API_BASE", server.url)
        ssm, cfn = world.session.client("ssm"), world.session.client("cloudformation")
        ssm.put_parameter(Name=SECRET, Value="sk_test_runbook", Type="SecureString")
        cfn.create_stack(StackName=STACK, Parameters=[{"ParameterKey": "StripeSecretParameter", "ParameterValue": SECRET},
                                                      {"ParameterKey": "Profile", "ParameterValue": "prod"}],
                         TemplateBody=json.dumps({
                             "AWSTemplateFormatVersion": "2010-09-09",
                             "Parameters": {"StripeSecretParameter": {"Type": "String"}, "Profile": {"Type": "String"}},
                             "Resources": {"Alarms": {"Type": "AWS::SNS::Topic"}},
                             "Outputs": {"LedgerTableName": {"Value": world.ledger_table}}}))
        yield world, server
        cfn.delete_stack(StackName=STACK)
        ssm.delete_parameter(Name=SECRET)


def charge(server, key: str = KEY, *, idempotency_key: str | None = None, stack_name: str = STACK) -> str:
    """A PaymentIntent as the handler makes one (ORDERS.md's metadata), at the loopback Stripe."""
    client = stripe.StripeClient("sk_test_runbook", base_addresses={"api": server.url}, max_network_retries=0)
    intent = client.v1.payment_intents.create(params={
        "amount": 1250, "currency": "usd", "confirm": True, "off_session": True, "payment_method": "pm_card_visa",
        "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "metadata": {"idem_stack": stack_name, "order_id": "A-1001", "idempotency_key": key, "account": "alice",
                     "bucket": "uploads", "key": "alice/A-1001.json", "version_id": "v1"}},
        options={"idempotency_key": idempotency_key or key})
    return str(intent.id)


def record(world, key: str = KEY) -> dict:
    return from_item(world.dynamodb.get_item(TableName=world.ledger_table, Key=to_item({"pk": key}),
                                             ConsistentRead=True).get("Item")) or {}


def put(world, **item) -> None:
    world.dynamodb.put_item(TableName=world.ledger_table, Item=to_item({"pk": KEY, **item}))


def settle(*argv: str) -> tuple[int, str, str]:
    return run_cli("settle", "--stack", STACK, "--region", "us-east-1", *argv)


def test_settle_books_the_charge_stripe_made_after_a_dry_run(stack):
    world, server = stack
    put(world, status="needs_attention", result={"reason": "the provider answered 500"})
    pi = charge(server)
    code, out, err = settle("--key", KEY)
    assert (code, err) == (0, "")
    assert f"would book: Stripe charged {pi} (1250 usd)" in out and "run again with --yes" in out
    assert record(world)["status"] == "needs_attention"  # a dry run changes nothing
    code, out, _ = settle("--key", KEY, "--yes")
    assert code == 0 and f"booked: Stripe charged {pi}" in out
    line = record(world)
    assert (line["status"], line["charge_id"], line["cents"], line["account"]) == ("done", pi, 1250, "alice")
    assert line["booked_day"] and "expires_at" not in line
    code, out, _ = settle("--key", KEY, "--yes")
    assert code == 0 and f"nothing to do: booked already ({pi}" in out


def test_settle_releases_a_record_nobody_charged_so_a_retry_can(stack):
    world, _ = stack
    put(world, status="in_progress", owner="gone", lease_until=world.clock.now() - 60)
    code, out, _ = settle("--key", KEY)
    assert code == 0 and "would release" in out and record(world)["status"] == "in_progress"
    code, out, _ = settle("--key", KEY, "--yes")
    assert code == 0 and "released" in out and record(world) == {}


def test_settle_leaves_a_record_an_invocation_still_holds(stack):
    world, _ = stack
    put(world, status="in_progress", owner="alive", lease_until=4e9)
    code, out, err = settle("--key", KEY, "--yes")
    assert (code, out) == (2, "") and "an invocation holds" in one_error_line(err)
    assert record(world)["owner"] == "alive"


def test_settle_names_a_second_charge_and_refund_refunds_it_once(stack):
    world, server = stack
    first = charge(server)
    second = charge(server, idempotency_key=KEY + "#after-the-key-was-pruned")
    code, out, _ = settle("--key", KEY, "--yes")
    assert code == 0 and f"booked: Stripe charged {first}" in out
    assert f"python -m idem refund --charge {second}" in out
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second)
    assert code == 0 and "would refund 1250 usd to alice" in out and server.account.refunds() == []
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second, "--yes", "--json")
    assert code == 0 and json.loads(out)["done"] is True
    (refund,) = server.account.refunds()
    assert (refund["payment_intent"], refund["amount"], refund["metadata"]["idem_stack"]) == (second, 1250, STACK)
    booked = record(world, f"refund#{second}")
    assert (booked["status"], booked["refund_id"], booked["refunded_cents"]) == ("refunded", refund["id"], 1250)
    assert record(world)["charge_id"] == first  # the order's own charge stays booked
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second, "--yes")
    assert (code, out) == (2, "") and "refunded already" in one_error_line(err)
    assert len(server.account.refunds()) == 1


def test_a_refund_is_sent_with_its_own_idempotency_key():
    sent = []

    def send(request):
        sent.append(request)
        return {"id": "re_1", "amount": 500}

    api = runbook.StripeApi("sk_test_x", "http://127.0.0.1:1", send)
    api.refund(runbook.Intent("pi_9", "succeeded", 500, "usd", "", 0, {}), {"idem_stack": "s"})
    assert sent[0].get_header("Idempotency-key") == "refund#pi_9"
    assert sent[0].get_header("Authorization") == "Bearer sk_test_x"


@pytest.mark.parametrize("argv, says", [
    (("settle", "--key", KEY), "unknown order"),
    (("settle", "--key", "A-1001"), "is not an order's idempotency key"),
    (("settle", "--charge", "pi_nope"), "no PaymentIntent pi_nope"),
    (("refund", "--charge", "pi_nope"), "no PaymentIntent pi_nope"),
    (("refund", "--charge", "ch_1"), "is not a PaymentIntent id"),
])
def test_bad_input_is_one_line_and_exit_2(stack, argv, says):
    code, out, err = run_cli(*argv, "--stack", STACK, "--region", "us-east-1", "--yes")
    assert (code, out) == (2, "") and says in one_error_line(err)


def test_a_charge_of_another_stack_is_not_refunded(stack):
    _, server = stack
    theirs = charge(server, stack_name="someone-else")
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", theirs, "--yes")
    assert (code, out) == (2, "") and "belongs to stack 'someone-else'" in one_error_line(err)
    assert server.account.refunds() == []


def test_an_unknown_stack_and_missing_credentials_are_one_line_and_exit_2(stack, monkeypatch, tmp_path):
    code, _, err = run_cli("settle", "--stack", "nope", "--region", "us-east-1", "--key", KEY)
    assert code == 2 and "no stack nope in us-east-1" in one_error_line(err)
    machine_free_aws_env(monkeypatch, tmp_path)  # no credentials at all
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", "pi_1")
    assert (code, out) == (2, "") and "no AWS credentials found" in one_error_line(err)
