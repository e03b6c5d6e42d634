"""`python -m idem settle` and `refund` on a local stack: a CloudFormation stack on moto (its
LedgerTableName output, its StripeSecretParameter parameter), the key in SSM, and the loopback
Stripe (idem/sim/stripe/server.py) behind STRIPE_API_BASE. Dry run first (or asked at a terminal),
--yes --reason to act, each act recorded with who and why; bad input is one line and exit code 2,
with nothing changed."""
from __future__ import annotations

import json
import time

import pytest
import stripe

from idem.core.reconcile import runbook
from idem.core.dynamo import from_item, to_item
from idem.sim.stripe.server import loopback_stripe
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


def charge(server, key: str = KEY, *, idempotency_key: str | None = None, stack_name: str = STACK,
           **metadata: str) -> str:
    """A PaymentIntent as the handler makes one (docs/one_charge_per_order.md's metadata), at the loopback Stripe."""
    client = stripe.StripeClient("sk_test_runbook", base_addresses={"api": server.url}, max_network_retries=0)
    intent = client.v1.payment_intents.create(params={
        "amount": 1250, "currency": "usd", "confirm": True, "off_session": True, "payment_method": "pm_card_visa",
        "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "metadata": {"idem_stack": stack_name, "order_id": "A-1001", "idempotency_key": key, "account": "alice",
                     "bucket": "uploads", "key": "alice/A-1001.json", "version_id": "v1", **metadata}},
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
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-7")
    assert code == 0 and f"booked: Stripe charged {pi}" in out
    line = record(world)
    assert (line["status"], line["charge_id"], line["cents"], line["account"]) == ("done", pi, 1250, "alice")
    assert line["booked_day"] and "expires_at" not in line
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-7")
    assert code == 0 and f"nothing to do: booked already ({pi}" in out


def test_settle_books_a_charge_to_the_uploads_account_not_to_the_stripe_customer(stack):
    """The handler's own metadata: `account` is the Stripe customer it charged (keyed_stripe), and
    `idem_account` the account whose folder the order came from (keyed_orders), which the ledger
    books (docs/money_contract.md, section 3). A line booked by settle under the customer's id
    would not be the account's, and the reconciliation would compare it with the wrong one."""
    world, server = stack
    put(world, status="pending", booked_day="pending", charge_id="pi_x")
    pi = charge(server, account="cus_alice", idem_account="alice")
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-8")
    assert code == 0 and f"booked: Stripe charged {pi}" in out
    line = record(world)
    assert (line["account"], line["currency"]) == ("alice", "usd")  # who and in what, as Stripe charged it


def test_settle_releases_a_record_nobody_charged_so_a_retry_can(stack):
    world, _ = stack
    put(world, status="in_progress", owner="gone", lease_until=world.clock.now() - 60)
    code, out, _ = settle("--key", KEY)
    assert code == 0 and "would release" in out and record(world)["status"] == "in_progress"
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-7")
    assert code == 0 and "released" in out
    released = record(world)  # never deleted: released, expired now (the handler's next claim takes it)
    assert released["status"] == "released" and released["expires_at"] <= time.time() + 5
    assert json.loads(released["held"])["owner"] == "gone"
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-7")  # run twice: nothing more to do
    assert code == 0 and "nothing to do: released already" in out and record(world)["released_at"] == released["released_at"]


def test_settle_leaves_a_record_an_invocation_still_holds(stack):
    world, _ = stack
    put(world, status="in_progress", owner="alive", lease_until=4e9)
    code, out, err = settle("--key", KEY, "--yes", "--reason", "INC-7")
    assert (code, out) == (2, "") and "an invocation holds" in one_error_line(err)
    assert record(world)["owner"] == "alive"


def test_settle_names_a_second_charge_and_refund_refunds_it_once(stack):
    world, server = stack
    first = charge(server)
    second = charge(server, idempotency_key=KEY + "#after-the-key-was-pruned")
    code, out, _ = settle("--key", KEY, "--yes", "--reason", "INC-7")
    assert code == 0 and f"booked: Stripe charged {first}" in out
    assert f"python -m idem refund --charge {second}" in out
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second)
    assert code == 0 and "would refund 1250 usd to alice" in out and server.account.refunds() == []
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second, "--yes", "--reason", "INC-7", "--json")
    assert code == 0 and json.loads(out)["done"] is True
    (refund,) = server.account.refunds()
    assert (refund["payment_intent"], refund["amount"], refund["metadata"]["idem_stack"]) == (second, 1250, STACK)
    booked = record(world, f"refund#{second}")
    assert (booked["status"], booked["refund_id"], booked["refunded_cents"]) == ("refunded", refund["id"], 1250)
    assert record(world)["charge_id"] == first  # the order's own charge stays booked
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", second, "--yes", "--reason", "INC-7")
    assert (code, out) == (2, "") and "refunded already" in one_error_line(err)
    assert len(server.account.refunds()) == 1


def audits(world) -> list[dict]:
    items = world.dynamodb.scan(TableName=world.ledger_table)["Items"]
    return sorted((from_item(i) for i in items if i["pk"]["S"].startswith("audit#")), key=lambda a: a["at"])


def test_each_act_is_recorded_with_who_ran_it_and_why_and_a_dry_run_is_not(stack):
    world, server = stack
    put(world, status="needs_attention", result={"reason": "the provider answered 500"})
    pi = charge(server)
    settle("--key", KEY)
    assert audits(world) == []  # a dry run acts on nothing and records nothing
    code, _, err = settle("--key", KEY, "--yes")
    assert code == 2 and "--reason is required" in one_error_line(err) and record(world)["status"] == "needs_attention"
    assert settle("--key", KEY, "--yes", "--reason", "PAGE-42: NeedsAttentionAlarm")[0] == 0
    (entry,) = audits(world)
    assert (entry["command"], entry["action"], entry["charge"]) == ("settle", "book", pi)
    assert entry["who"].startswith("arn:aws:") and entry["why"] == "PAGE-42: NeedsAttentionAlarm"
    assert entry["outcome"] == "done" and json.loads(entry["before"])["status"] == "needs_attention"


def test_a_refund_whose_booking_failed_is_booked_by_the_rerun_and_not_refunded_again(stack, monkeypatch):
    world, server = stack
    pi = charge(server, KEY)
    import idem.deploy.aws.connect as connect
    real_open = connect.open_session

    def session_with_failing_ledger(*a, **k):  # the first run's ledger write fails, after Stripe refunded
        session = real_open(*a, **k)
        client = session.client

        def patched(name, *args, **kwargs):
            made = client(name, *args, **kwargs)
            if name == "dynamodb" and not getattr(session_with_failing_ledger, "failed", False):
                session_with_failing_ledger.failed = True
                made.update_item = lambda **request: (_ for _ in ()).throw(runbook.ClientError(
                    {"Error": {"Code": "InternalServerError", "Message": "lost"}}, "UpdateItem"))
            return made
        session.client = patched
        return session
    monkeypatch.setattr(connect, "open_session", session_with_failing_ledger)
    refund = ("refund", "--stack", STACK, "--region", "us-east-1", "--charge", pi, "--yes", "--reason", "dup charge")
    code, _, err = run_cli(*refund)
    assert code != 0 and len(server.account.refunds()) == 1 and record(world, f"refund#{pi}") == {}
    assert audits(world)[-1]["outcome"].startswith("failed")  # the failure is on the record too
    code, out, err = run_cli(*refund)  # the rerun: Stripe has refunded, the ledger has not booked it
    assert (code, err) == (0, "") and "booked: Stripe refunded 1250 usd" in out
    (made,) = server.account.refunds()
    booked = record(world, f"refund#{pi}")
    assert (booked["refunded_cents"], booked["refund_id"]) == (1250, made["id"])
    code, _, err = run_cli(*refund)  # and a third run has nothing left to do
    assert code == 2 and "refunded already" in one_error_line(err) and len(server.account.refunds()) == 1
    assert [a["action"] for a in audits(world)] == ["refund", "book refund"]


def test_at_a_terminal_the_command_shows_the_plan_and_acts_only_on_yes(stack, monkeypatch):
    from idem.cli.settle import confirmed

    plan = runbook.Plan("order x", "book", "Stripe charged pi_1")

    class Args:
        yes, reason = False, "INC-9"
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    assert confirmed(Args(), plan, ask=lambda prompt: "yes") is True
    assert confirmed(Args(), plan, ask=lambda prompt: "no") is False
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert confirmed(Args(), plan, ask=lambda prompt: "yes") is False  # a pipe: a dry run, never a guess


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
    code, out, err = run_cli(*argv, "--stack", STACK, "--region", "us-east-1", "--yes", "--reason", "INC-7")
    assert (code, out) == (2, "") and says in one_error_line(err)


def test_a_charge_of_another_stack_is_not_refunded(stack):
    _, server = stack
    theirs = charge(server, stack_name="someone-else")
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", theirs, "--yes", "--reason", "INC-7")
    assert (code, out) == (2, "") and "belongs to stack 'someone-else'" in one_error_line(err)
    assert server.account.refunds() == []


def test_an_unknown_stack_and_missing_credentials_are_one_line_and_exit_2(stack, monkeypatch, tmp_path):
    code, _, err = run_cli("settle", "--stack", "nope", "--region", "us-east-1", "--key", KEY)
    assert code == 2 and "no stack nope in us-east-1" in one_error_line(err)
    machine_free_aws_env(monkeypatch, tmp_path)  # no credentials at all
    code, out, err = run_cli("refund", "--stack", STACK, "--region", "us-east-1", "--charge", "pi_1")
    assert (code, out) == (2, "") and "no AWS credentials found" in one_error_line(err)
