"""A payments reviewer's sixth round on Stripe's webhook into the ledger (idem/core/webhook.py; the handler's
probes are tests/test_handler_review_round6.py): events rounds 1-5 did not send. P3 of docs/money_contract.md:
"the books equal Stripe"; what is final stays final. A probe that holds is a regression test; a defect fixed
says so in its docstring."""
from __future__ import annotations

from test_webhook import SECRET, books, intent_event, put, record, signed, status_of  # noqa: F401 (fixture)

from idem.core import webhook


def test_a_held_charge_stripe_cancels_is_declined_by_its_event_not_left_pending_for_ever(books):  # noqa: F811 (the fixture)
    """P3. An authorization not captured in time is canceled ("If the authorization expires before you capture the
    funds, the funds are released and the payment status changes to canceled", https://docs.stripe.com/payments/capture-later),
    and a PaymentIntent canceled by hand "makes no additional charges ... For PaymentIntents with a status of
    requires_capture, the remaining amount_capturable is automatically refunded"
    (https://docs.stripe.com/api/payment_intents/cancel); Stripe sends `payment_intent.canceled`
    (https://docs.stripe.com/api/events/types). The order's `pending` record (the handler's requires_capture) becomes
    `declined`, never booked: no money was taken. (Was ignored: the record stayed pending for ever, an upload of the
    order answered `pending`, and no alarm fired after its window's one finding: fixed.)"""
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")
    event = intent_event("evt_c1", "payment_intent.canceled")
    event["data"]["object"].update(amount_received=0, amount_capturable=0)
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "declined")
    line = record(books)
    assert line["status"] == "declined" and "booked_at" not in line and "account" not in line
    assert status_of(webhook.receive(signed(event), SECRET, books)) == (200, "duplicate: handled already")


def test_a_cancel_or_failure_delivered_after_the_success_leaves_the_line_booked(books):  # noqa: F811 (the fixture)
    """P3, what is final stays final: a `succeeded` PaymentIntent is done ("succeeded: ... the payment is complete",
    https://docs.stripe.com/payments/paymentintents/lifecycle), and "Stripe doesn't guarantee the delivery of events
    in the order that they're generated" (https://docs.stripe.com/webhooks#event-ordering): an earlier attempt's
    failure, arriving after the success, leaves the booked line as it is."""
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")
    assert status_of(webhook.receive(signed(intent_event("evt_s", "payment_intent.succeeded")), SECRET, books)) == (
        200, "booked")
    booked = record(books)
    for n, late in enumerate(("payment_intent.payment_failed", "payment_intent.canceled")):
        assert status_of(webhook.receive(signed(intent_event(f"evt_l{n}", late)), SECRET, books))[0] == 200
    assert record(books) == booked and booked["status"] == "done"


def test_a_success_delivered_after_the_same_charges_failure_is_booked(books):  # noqa: F811 (the fixture)
    """P3. A failed attempt leaves a PaymentIntent `requires_payment_method`, not final: it waits there for a payment
    method and may be confirmed again (https://docs.stripe.com/payments/paymentintents/lifecycle); `succeeded` is final. The ledger follows: a success
    of the very charge the record declined is booked, fenced on that charge id. (Was answered "settled already",
    and the money moved on no line: the reconciliation had judged the charge's window before it succeeded: fixed.)"""
    put(books, status="pending", charge_id="pi_1", cents=500, owner="o1")
    assert status_of(webhook.receive(signed(intent_event("evt_f", "payment_intent.payment_failed")), SECRET, books)) == (
        200, "declined")
    assert status_of(webhook.receive(signed(intent_event("evt_ok", "payment_intent.succeeded")), SECRET, books)) == (
        200, "booked")
    line = record(books)
    assert (line["status"], line["account"], line["cents"]) == ("done", "alice", 500)


def test_a_failure_event_for_an_order_the_handler_declined_is_answered_200_not_retried_for_three_days(books):  # noqa: F811 (the fixture)
    """P3/P4. Every off-session decline the handler records (a 402 card_error, final: `declined`) is also sent by
    Stripe as `payment_intent.payment_failed` (https://docs.stripe.com/api/events/types), and the handler's record
    names no charge id. A non-2xx answer makes Stripe deliver it again "for up to three days"
    (https://docs.stripe.com/webhooks#retries), each delivery a failure in the endpoint's log for nothing: the event
    must be marked and answered 200, the record left declined. (Was answered 409 on every delivery: fixed.)"""
    put(books, status="declined", owner="o1", result={"status": "declined", "code": "card_declined"})
    for kind in ("payment_intent.payment_failed", "payment_intent.canceled"):
        code, _ = status_of(webhook.receive(signed(intent_event(f"evt_{kind}", kind)), SECRET, books))
        assert code == 200
    assert record(books)["status"] == "declined" and record(books, "event#evt_payment_intent.payment_failed")


def test_a_success_for_an_order_the_handler_declined_without_a_charge_id_is_not_booked_blind(books):  # noqa: F811 (the fixture)
    """P3: a success names a charge; a record declined with no charge id cannot tell it is this order's charge
    (https://docs.stripe.com/webhooks#handle-duplicate-events: handle each event against the state it changes).
    It is answered 409 (Stripe retries; the reconciliation sees the succeeded charge on no line), never booked."""
    put(books, status="declined", owner="o1", result={"status": "declined", "code": "card_declined"})
    code, _ = status_of(webhook.receive(signed(intent_event("evt_x", "payment_intent.succeeded")), SECRET, books))
    assert code == 409 and record(books)["status"] == "declined"



def test_a_success_for_a_parked_order_is_never_booked_over_the_park(books):  # noqa: F811 (the fixture)
    """P1/P3: a parked order (`needs_attention`: a 500 Stripe kept for the key, or other terms asked) waits for a
    person (`idem settle` books or refunds what Stripe holds). Its charge's success event names the order's key, but
    the park may say the charge is on other terms than the order's: the webhook leaves it (409: Stripe retries,
    https://docs.stripe.com/webhooks#retries), and the reconciliation reports the charge `unbooked` beside the park."""
    put(books, status="needs_attention", owner="o1", result={"reason": "the provider answered 500"})
    code, _ = status_of(webhook.receive(signed(intent_event("evt_p", "payment_intent.succeeded")), SECRET, books))
    assert code == 409 and record(books)["status"] == "needs_attention" and "booked_at" not in record(books)

# == the reconciliation, over a pending record's life (P3/P4) =========================================================
def test_a_record_left_pending_after_its_window_is_a_finding_in_a_later_window_once_stripe_settled_it():
    """P3/P4 (was a pinned gap: no later window reported it; fixed). The hourly job judges each window once: an order
    charged `processing` is one `pending` finding then (`ReconcileDifferencesAlarm`). If Stripe's settling event
    never reaches the ledger (the endpoint failed for longer than Stripe's "up to three days" of retries,
    https://docs.stripe.com/webhooks#retries), the record stays `pending` while Stripe says `canceled`
    (https://docs.stripe.com/api/payment_intents/cancel). Every window queries the records pending past 3 days
    (the by_day index's `pending` partition, never a Scan) and retrieves each PaymentIntent: one Stripe settled is
    a `pending` finding, in every window until a person settles it; one Stripe still holds `processing` agrees."""
    from test_reconcile_per_order import kinds, stripe_stack

    with stripe_stack() as stack:
        method = stack.customer("cus_gina", payment_method="us_bank_account")  # settles later: processing
        stack.link("gina", "cus_gina")
        charged = stack.charge("gina", "G-1", "cus_gina", method)
        key = stack.book("gina", "G-1", charged, status="pending")
        assert kinds(stack.run()) == [("pending", charged)]
        stack.world.clock.advance(4 * 24 * 3600)
        assert stack.run().findings == []  # Stripe still says processing: the ledger agrees
        made = stack.server.account.modes["test"].intents[charged]
        made.update(status="canceled", amount_received=0)
        stack.server.account.modes["test"].indexed.setdefault(charged, []).append((stack.world.clock.now(), dict(made)))
        (stale,) = stack.run().findings
        assert (stale.kind, stale.key, stale.command) == ("pending", key, f"python -m idem settle --stack idem-test --key {key}")
        assert "Stripe: canceled" in stale.detail
        stack.world.clock.advance(24 * 3600)
        assert kinds(stack.run()) == [("pending", charged)]  # still unsettled in the ledger: reported again
        assert record_status(stack, key) == "pending"


def record_status(stack, key: str) -> str:
    item = stack.world.dynamodb.get_item(TableName=stack.world.ledger_table, Key={"pk": {"S": key}})["Item"]
    return str(item["status"]["S"])
