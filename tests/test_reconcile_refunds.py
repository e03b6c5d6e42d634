"""The reconciliation and refunds (docs/money_contract.md, property 3): the charge a double's finding
tells a person to refund is one the ledger does not book; a refund made at Stripe outside `idem refund`
(in the Dashboard) that the ledger does not book is a finding whose command books it."""
from __future__ import annotations

from typing import Any

import pytest

from idem.core.reconcile.compare import compare
from idem.core.reconcile.report import Entry

HOUR = 3600


def test_a_double_whose_booked_charge_is_older_than_the_windows_lines_keeps_the_one_its_record_books():
    """The line of the booked charge may be older than the lines the window reads (booked a day ago);
    the order's record names it (`result.charge_id`), read by key for that double only: of three charges
    the middle one is booked, so the first and the third are the ones to refund."""
    at = 1000.0
    charges = [Entry(f"pi_{n}", "alice", 500, at + n * 25 * HOUR, key="charge#order#k", status="succeeded")
               for n in (1, 2, 3)]
    asked: list[str] = []

    def status_of(key: str) -> tuple[str, dict[str, Any]]:
        asked.append(key)
        return "done", {"status": "charged", "charge_id": "pi_2"}

    start = (at + 3 * 25 * HOUR) // HOUR * HOUR
    report = compare([], charges, start, start + HOUR, status_of=status_of)
    doubles = [f for f in report.findings if f.kind == "double"]
    assert [(f.what, f.command.split()[-1]) for f in doubles] == [("pi_1", "pi_1"), ("pi_3", "pi_3")]
    assert all("kept: pi_2, booked" in f.detail for f in doubles)
    assert asked == ["charge#order#k"]


def test_a_double_with_no_booked_charge_keeps_the_first():
    at = 1000.0
    charges = [Entry(f"pi_{n}", "alice", 500, at + n * 25 * HOUR, key="charge#order#k", status="succeeded")
               for n in (1, 2)]
    start = (at + 2 * 25 * HOUR) // HOUR * HOUR
    report = compare([], charges, start, start + HOUR, status_of=lambda key: ("needs_attention", {}))
    doubles = [f for f in report.findings if f.kind == "double"]
    assert [f.what for f in doubles] == ["pi_2"] and "kept: pi_1, the first" in doubles[0].detail


# -- refunds made outside `idem refund` (on moto and the loopback Stripe) ---------------------------------------
@pytest.fixture
def stack() -> Any:
    from test_reconcile_per_order import stripe_stack  # the loopback Stripe and the job's settings

    with stripe_stack() as made:
        yield made


def booked_charge(stack: Any, order_id: str = "R-1", cents: int = 500) -> str:
    """A charge of alice's (her customer made and linked once), booked as the handler books it."""
    if not hasattr(stack, "alice_method"):
        stack.alice_method = stack.customer("cus_alice")
        stack.link("alice", "cus_alice")
    method = stack.alice_method
    charged = stack.charge("alice", order_id, "cus_alice", method, cents=cents)
    stack.book("alice", order_id, charged, cents=cents, customer="cus_alice")
    return charged


def runbook_api(stack: Any) -> Any:
    from idem.core.reconcile import runbook

    return runbook.StripeApi("sk_test_recon", stack.server.url)


def test_a_partial_refund_made_in_the_dashboard_is_booked_by_the_findings_command_never_topped_up(stack):
    """The finding's command (`idem refund --charge`) books what Stripe refunded (200 of 500) and
    refunds nothing more; the window judged again is clean."""
    from idem.core.reconcile import runbook

    charged = booked_charge(stack)
    stack.client.v1.refunds.create(params={"payment_intent": charged, "amount": 200})
    (finding,) = stack.run().findings
    assert (finding.kind, finding.what) == ("refund", charged) and "made outside idem refund" in finding.detail
    plan = runbook.plan_refund(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), charged, "idem-test")
    assert plan.action == "book refund" and "Stripe refunded 200 usd of 500 and the ledger books 0" in plan.because
    runbook.apply_refund(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), plan)
    assert [r["amount"] for r in stack.server.account.refunds()] == [200]  # nothing more refunded
    assert stack.run().findings == []
    again = runbook.plan_refund(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), charged, "idem-test")
    assert (again.action, again.because.split(" to ")[0]) == ("refund", "300 usd")  # the rest only when asked again


def test_a_refund_made_by_idem_refund_is_booked_and_no_finding(stack):
    from idem.core.reconcile import runbook

    charged = booked_charge(stack)
    plan = runbook.plan_refund(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), charged, "idem-test")
    assert plan.action == "refund"
    runbook.apply_refund(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), plan)
    assert stack.run().findings == []


def test_a_second_dashboard_refund_after_a_booked_one_is_found(stack):
    """Stripe's total for the charge (its refunds, by payment_intent) against the ledger's: 100 booked,
    then 150 more refunded in the Dashboard an hour later, is 250 refunded and 100 booked."""
    from idem.core.dynamo import to_item

    charged = booked_charge(stack)
    stack.client.v1.refunds.create(params={"payment_intent": charged, "amount": 100})
    stack.world.dynamodb.put_item(TableName=stack.world.ledger_table, Item=to_item({
        "pk": f"refund#{charged}", "status": "refunded", "refunded_cents": 100, "refunded_charge": charged}))
    assert stack.run().findings == []  # as the webhook books charge.refunded
    stack.world.clock.advance(HOUR)
    stack.client.v1.refunds.create(params={"payment_intent": charged, "amount": 150})
    (finding,) = stack.run().findings
    assert finding.kind == "refund" and "Stripe refunded 250 of 500 usd" in finding.detail
    assert "the ledger books 100 refunded" in finding.detail


def test_a_refund_is_judged_in_its_own_window_however_old_its_charge(stack):
    charged = booked_charge(stack)
    assert stack.run().findings == []
    stack.world.clock.advance(3 * 24 * HOUR)
    stack.client.v1.refunds.create(params={"payment_intent": charged})
    assert [(f.kind, f.what) for f in stack.run().findings] == [("refund", charged)]


def test_a_refund_of_another_stacks_charge_is_no_finding(stack):
    method = stack.customer("cus_carol")
    theirs = stack.client.v1.payment_intents.create(params={
        "amount": 500, "currency": "usd", "confirm": True, "off_session": True, "customer": "cus_carol",
        "payment_method": method, "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
        "metadata": {"idem_stack": "someone-else"}}).id
    stack.client.v1.refunds.create(params={"payment_intent": theirs})
    assert stack.run().findings == []


def test_a_key_that_may_not_list_refunds_is_one_finding_and_the_window_is_still_judged(stack):
    """A restricted key without Refunds: Read is answered 403 (https://docs.stripe.com/api/errors): the
    window's report stands (here its unbooked charge), with one finding saying refunds were not checked."""
    import io
    import urllib.error

    from idem.core.reconcile import job

    method = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    loose = stack.charge("alice", "L-1", "cus_alice", method)

    def fetch(request: Any) -> Any:
        if "/v1/refunds" in request.full_url:
            raise urllib.error.HTTPError(request.full_url, 403, "Forbidden", {}, io.BytesIO(b"{}"))  # type: ignore[arg-type]
        return job._fetch_json(request)

    from idem.sim.world import fake_session

    start = stack.world.clock.now() // HOUR * HOUR
    report = job.rerun(stack.env, fake_session(), job.iso(start), say=lambda _: None, fetch=fetch)
    assert [(f.kind, f.what) for f in report.findings] == [("unbooked", loose), ("refund", "refunds")]
    assert "Refunds: Read" in report.findings[1].command


def test_the_cost_model_counts_the_refund_calls_a_window_makes(stack):
    """idem/cost/reconcile_cost.py's refund lines are the job's own calls: a window with two refunded
    charges (booked) lists its refunds once and each refunded charge's refunds once
    (`refund_lists(2)` = 3), reads each one's `refund#<pi>` once, and retrieves nothing (no difference)."""
    from idem.core.dynamo import to_item
    from idem.cost.reconcile_cost import refund_lists
    from idem.sim.world import fake_session

    charged = [booked_charge(stack, f"R-{n}") for n in range(3)]
    for pi in charged[:2]:
        refund = stack.client.v1.refunds.create(params={"payment_intent": pi})
        stack.world.dynamodb.put_item(TableName=stack.world.ledger_table, Item=to_item({
            "pk": f"refund#{pi}", "status": "refunded", "refunded_cents": refund.amount, "refunded_charge": pi}))
    session = fake_session()
    gets: list[str] = []
    session.events.register("before-parameter-build.dynamodb.GetItem",
                            lambda params, **_: gets.append(params["Key"]["pk"]["S"]))
    before = len(stack.server.requests)
    assert stack.run(session).findings == []
    paths = [path for _, path in stack.server.requests[before:]]
    assert paths.count("/v1/refunds") == refund_lists(2) == 3
    assert not [p for p in paths if p.startswith("/v1/payment_intents/pi_")]
    assert sorted(g for g in gets if g.startswith("refund#")) == sorted(f"refund#{pi}" for pi in charged[:2])


def test_settle_on_a_double_whose_line_books_the_later_charge_keeps_it_and_names_the_earlier_to_refund(stack):
    """`idem settle --key` says what the reconciliation's `double` says: the booked charge stays, the
    other is refunded (its command listed)."""
    from idem.core.reconcile import runbook

    method = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    first = stack.charge("alice", "D-1", "cus_alice", method)
    stack.world.clock.advance(25 * HOUR)
    second = stack.charge("alice", "D-1", "cus_alice", method, header_key="charge#order#alice#D-1#again")
    key = stack.book("alice", "D-1", second, customer="cus_alice")
    plan = runbook.plan_settle(stack.world.dynamodb, stack.world.ledger_table, runbook_api(stack), key=key,
                               stack="idem-test", now=stack.world.clock.now())
    assert plan.action == "nothing" and f"books {second}, which stays" in plan.because
    assert [o.id for o in plan.others] == [first]
    assert f"python -m idem refund --charge {first}" in plan.render()
    doubles = [f for f in stack.run().findings if f.kind == "double"]
    assert [f.what for f in doubles] == [first]
