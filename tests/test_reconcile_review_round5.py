"""A payments reviewer's fifth round on the reconciliation (issue 39; the handler's probes are
tests/test_handler_review_round5.py), on moto and the loopback Stripe: cases rounds 1-4 did not try. P3 of
docs/money_contract.md: "the books equal Stripe, per order, account, amount and currency". A probe that holds
is a regression test; a defect fixed says so; a `test_pins_gap_...` asserts today's behaviour, with what should
hold and why."""
from __future__ import annotations

from typing import Any

import pytest

from idem.core.reconcile import job
from idem.sim.stripe.keys import prune_idempotency_keys
from idem.sim.world import fake_session

HOUR = 3600


@pytest.fixture
def stack() -> Any:
    from test_reconcile_per_order import stripe_stack  # the loopback Stripe and the job's settings

    with stripe_stack() as made:
        yield made


def kinds(report: Any) -> list[tuple[str, str]]:
    return [(f.kind, f.what) for f in report.findings]


def intent(stack: Any, pi: str) -> dict[str, Any]:
    return stack.server.account.modes["test"].intents[pi]


def restatus(stack: Any, pi: str, **fields: Any) -> None:
    """A PaymentIntent changed at Stripe after it was made (a capture, an expiry), as retrieve and search show it."""
    made = intent(stack, pi)
    made.update(fields)
    stack.server.account.modes["test"].indexed.setdefault(pi, []).append((stack.world.clock.now(), dict(made)))


def judge(stack: Any, start: float) -> Any:
    """The window [start, start + 1 h) judged again, as a person's rerun does."""
    return job.rerun(stack.env, fake_session(), job.iso(start), say=lambda _: None)


def alice(stack: Any) -> str:
    method = stack.customer("cus_alice")
    stack.link("alice", "cus_alice")
    return method


# == amounts: what Stripe took, not what was asked ==================================================================
def test_a_partial_capture_booked_at_the_full_amount_is_an_amount_finding(stack):
    """P3: "amount_received: Amount that this PaymentIntent collects"; a capture may take less than was held
    ("You can capture less than the original amount", https://docs.stripe.com/payments/capture-later): the line
    booking 1250 for a PaymentIntent that received 1000 is an `amount` finding."""
    method = alice(stack)
    pi = stack.charge("alice", "C-1", "cus_alice", method, cents=1250)
    restatus(stack, pi, amount_received=1000)
    stack.book("alice", "C-1", pi, cents=1250, customer="cus_alice")
    report = stack.run()
    assert kinds(report) == [("amount", pi)]
    assert "ledger 1250" in report.findings[0].detail and "provider 1000" in report.findings[0].detail


def test_a_booked_charge_whose_hold_expired_is_an_uncharged_finding(stack):
    """P3: an authorization not captured in time is canceled and its funds released ("If the authorization
    expires before you capture the funds, the funds are released and the payment status changes to canceled",
    https://docs.stripe.com/payments/capture-later): a line booking it names money Stripe never took."""
    method = alice(stack)
    pi = stack.charge("alice", "C-2", "cus_alice", method, cents=500)
    restatus(stack, pi, status="canceled", amount_received=0, cancellation_reason="automatic")
    stack.book("alice", "C-2", pi, customer="cus_alice")
    assert kinds(stack.run()) == [("uncharged", pi)]


def test_a_held_charge_with_no_line_is_one_pending_finding(stack):
    """P3/P4: `requires_capture` is money held, not taken (https://docs.stripe.com/payments/capture-later); with no
    line it is one `pending` finding (never `unbooked` too), as the handler records it pending."""
    method = alice(stack)
    pi = stack.charge("alice", "C-3", "cus_alice", method, cents=500)
    restatus(stack, pi, status="requires_capture", amount_received=0, amount_capturable=500)
    assert kinds(stack.run()) == [("pending", pi)]


@pytest.mark.parametrize("charge_id", ["pi_neverexisted", "ch_3Pnotapaymentintent", "py_someotherobject"])
def test_a_line_naming_no_payment_intent_stripe_holds_is_uncharged(stack, charge_id):
    """P3: "no line without [a charge]". Retrieve answers 404 resource_missing for an id it does not hold
    (https://docs.stripe.com/error-codes/resource-missing); an id that is no PaymentIntent's (a Charge `ch_`,
    another object) is no charge of this stack's either: each such line is an `uncharged` finding."""
    alice(stack)
    stack.book("alice", "N-1", charge_id, customer="cus_alice")
    assert kinds(stack.run()) == [("uncharged", charge_id)]


# == currencies ========================================================================================================
def test_a_refund_of_a_zero_decimal_charge_is_reported_in_its_own_currency_and_minor_unit(stack):
    """P3. For zero-decimal currencies the amount is in the currency's unit: ¥500 is 500
    (https://docs.stripe.com/currencies#zero-decimal); a refund of ¥200 made in the dashboard
    (https://docs.stripe.com/api/refunds/create) is a finding saying 200 of 500 jpy, never scaled."""
    method = alice(stack)
    pi = stack.charge("alice", "Y-1", "cus_alice", method, cents=500, currency="jpy")
    stack.book("alice", "Y-1", pi, cents=500, currency="jpy", customer="cus_alice")
    stack.client.v1.refunds.create(params={"payment_intent": pi, "amount": 200})
    (finding,) = stack.run().findings
    assert (finding.kind, finding.what) == ("refund", pi)
    assert "Stripe refunded 200 of 500 jpy" in finding.detail


def test_two_charges_of_one_order_in_two_currencies_are_a_double(stack):
    """P1/P3: once Stripe pruned the order's key (https://docs.stripe.com/idempotency: "at least 24 hours old"), a
    second charge of the order in another currency is still the order's second charge: a `double`, the unbooked
    one to refund, whatever its currency."""
    method = alice(stack)
    first = stack.charge("alice", "D-1", "cus_alice", method, cents=500, currency="usd")
    stack.book("alice", "D-1", first, customer="cus_alice")
    stack.world.clock.advance(25 * HOUR)
    prune_idempotency_keys(stack.server.account)
    second = stack.charge("alice", "D-1", "cus_alice", method, cents=500, currency="eur")
    assert kinds(stack.run()) == [("double", second)]


# == the window's edges ================================================================================================
@pytest.mark.parametrize("hours_on", [0, 23])  # 23: the window before midnight, its line in the next day's index
def test_a_charge_made_in_a_windows_last_second_and_booked_after_it_is_no_finding_in_either_window(stack, hours_on):
    """P3: windows are [start, end); a line is read up to LAG past its window (one Query of the `by_day` index per
    UTC day the reach touches), and a line booked in the next window, or the next day, for a charge made in this
    one is matched with it (by its order's key): no finding in either."""
    method = alice(stack)
    stack.world.clock.advance(hours_on * HOUR)
    start = stack.world.clock.now() // HOUR * HOUR
    stack.world.clock.advance(start + HOUR - 1 - stack.world.clock.now())  # the window's last second
    pi = stack.charge("alice", "W-1", "cus_alice", method)
    stack.world.clock.advance(2)  # booked in the next window
    stack.book("alice", "W-1", pi, customer="cus_alice")
    assert (job.day_of(start) != job.day_of(stack.world.clock.now())) is (hours_on == 23)
    assert kinds(judge(stack, start)) == [] and kinds(judge(stack, start + HOUR)) == []


def test_a_charge_made_at_a_windows_end_belongs_to_the_next_window(stack):
    """P3: windows are half-open, [start, end): a charge whose `created` is the end second is judged once, in
    the next window (Stripe's search `created>=start AND created<end`, https://docs.stripe.com/search)."""
    method = alice(stack)
    start = stack.world.clock.now() // HOUR * HOUR
    stack.world.clock.advance(start + HOUR - stack.world.clock.now())
    pi = stack.charge("alice", "W-2", "cus_alice", method)  # no line: unbooked, once
    assert kinds(judge(stack, start)) == []
    assert kinds(judge(stack, start + HOUR)) == [("unbooked", pi)]


# == who pays ===========================================================================================================
def test_pins_gap_a_relink_before_the_window_is_judged_is_an_account_finding_telling_to_refund_a_good_charge(stack):
    """P3, a gap. A relink "replaces the customer for later orders; orders charged already stay charged to the old
    one" (idem/core/customers.py, `idem customers link`). The window is judged LAG (hours) after it closes, and
    compares each line's charge with the account's link as it is *then*: an order rightly charged to cus_alice,
    alice relinked to cus_alice2 a minute later, is an `account` finding whose command refunds the good charge.
    What should hold: the charge is compared with the link that stood when it was made. The link item keeps only
    the current customer and its `linked_at` (BRIEF decision 2), so the job cannot know the earlier one; the
    design: `idem customers link` keeps the replaced links (customer, from, until) on the item, and the job picks
    the one whose period holds the charge's `created` (a link newer than every charge of the window changes
    nothing). Today: the finding."""
    method = alice(stack)
    pi = stack.charge("alice", "L-1", "cus_alice", method)
    stack.book("alice", "L-1", pi, customer="cus_alice")
    stack.world.clock.advance(60)
    stack.customer("cus_alice2")
    stack.link("alice", "cus_alice2")
    report = stack.run()
    assert kinds(report) == [("account", pi)]
    assert report.findings[0].command.endswith(f"refund --stack idem-test --charge {pi}")


def test_pins_gap_a_relink_to_the_wrong_charges_customer_hides_it(stack):
    """P3, the same gap from the other side: bob's order charged to cus_alice (the mistake the check exists for),
    then bob relinked to cus_alice before the window is judged, is no finding: the job sees only the link as it
    is now. With the replaced links kept (above), the charge would be compared with cus_bob, bob's link when it
    was made, and found. Today: no finding."""
    method = alice(stack)
    stack.customer("cus_bob")
    stack.link("bob", "cus_bob")
    pi = stack.charge("bob", "B-1", "cus_alice", method)
    stack.book("bob", "B-1", pi, customer="cus_alice")
    stack.world.clock.advance(60)
    stack.link("bob", "cus_alice")
    assert kinds(stack.run()) == []


# == orders one business calls the same ===================================================================================
@pytest.mark.parametrize("first, second", [("1001", "01001"), ("A-1001", "a-1001")])
def test_pins_gap_two_order_ids_one_business_calls_the_same_are_no_finding(stack, first, second):
    """P1, a gap. The handler charges "1001" and "01001" as two orders (JSON compares strings code unit by code
    unit, https://www.rfc-editor.org/rfc/rfc8259#section-8.3; it cannot know a business's rule), and the
    reconciliation groups charges by the exact key or order: two charges of one account, one amount, ids equal
    but for leading zeros or case, are no finding. What should hold: such a pair is a finding of its own kind
    (say `similar`, not `double`: both may be real orders), naming both charges, for a person to confirm or
    refund; its cost is one more grouping of the window's charges by (account, amount, folded id). Today: none."""
    method = alice(stack)
    for order_id in (first, second):
        stack.book("alice", order_id, stack.charge("alice", order_id, "cus_alice", method), customer="cus_alice")
    assert kinds(stack.run()) == []


def test_two_accounts_orders_whose_names_run_together_are_two_orders_not_a_double(stack):
    """P1/P3: an order is (account, order_id) (BRIEF decision 3); the job groups a charge with its order by
    the order its metadata names. Account `a#order=1`'s order `2` and account `a`'s order `1#order=2` are two
    orders (two keys: sha256(account \\n order_id)); `#` may stand in both an S3 key's folder
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html) and an order id. Written
    together as `a#order=1#order=2` they were one order to the job: a `double` telling a person to refund a
    good charge. (Was a double: fixed, `#` and `%` in the names are escaped in the order's label.)"""
    for account, order_id, customer in (("a#order=1", "2", "cus_one"), ("a", "1#order=2", "cus_two")):
        method = stack.customer(customer)
        stack.link(account, customer)
        stack.book(account, order_id, stack.charge(account, order_id, customer, method), customer=customer)
    assert kinds(stack.run()) == []


@pytest.mark.parametrize("apart", [0, 25 * HOUR])
def test_a_line_booking_a_charge_made_for_another_order_is_a_finding(stack, apart):
    """P3: "for every succeeded PaymentIntent of this stack there is one line with the same order ... and no line
    without one". A line of order X-2 naming X-1's charge (a person's `idem settle --charge` with the wrong id, or a
    copy of a record) books 500 Stripe never took for X-2: the charge's metadata names X-1's key
    (`idempotency_key`, https://docs.stripe.com/api/metadata), not X-2's. An `uncharged` finding for the X-2
    line, in its window, whether booked with X-1's line or a day after. (Was no finding: fixed.)"""
    method = alice(stack)
    pi = stack.charge("alice", "X-1", "cus_alice", method)
    stack.book("alice", "X-1", pi, customer="cus_alice")
    stack.world.clock.advance(apart)
    wrong = stack.book("alice", "X-2", pi, customer="cus_alice")
    report = stack.run()
    assert [(f.kind, f.what, f.key) for f in report.findings] == [("uncharged", pi, wrong)]
    assert "X-1" in report.findings[0].detail or "another order" in report.findings[0].detail
