"""A payments reviewer's fifth round on the handler to copy (issue 39; the reconciliation's probes are
tests/test_reconcile_review_round5.py), on moto and the loopback Stripe: cases rounds 1-4 did not try.

Each test names the property of docs/money_contract.md it probes (P1: one succeeded charge per (account,
order) for the order's life; P2: the amount, currency and customer from the trusted source, or parked; P3:
the books equal Stripe; P4: nothing parked without a count) and the published rule it rests on. A probe that
holds is a plain regression test; one that found a defect was fixed (its docstring says so, and the commit
names it); a defect that needs a design change is a `test_pins_gap_...` test asserting today's behaviour,
with what should hold and why."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import stripe._http_client

from idem.core.handlers import keyed
from idem.sim.stripe.keys import prune_idempotency_keys
from test_handler_review_round4 import _intents, charge, commit_refused, link, order, records

HOUR = 3600


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch):
    monkeypatch.setattr(stripe._http_client.HTTPClient, "_sleep_time_seconds", lambda self, n, response=None: 0.0)


@pytest.fixture
def world():
    from idem.sim.stripe.server import loopback_stripe
    from idem.sim.world import LocalWorld

    with LocalWorld(link_customers=False) as w, loopback_stripe(w) as server:
        w.stripe = server
        yield w


def succeeded(world: Any) -> list[dict[str, Any]]:
    """The PaymentIntents in which money moved or is held (P1 counts them)."""
    return [i for i in _intents(world).values() if i["status"] in ("succeeded", "processing", "requires_capture")]


def restatus(world: Any, intent: dict[str, Any], **fields: Any) -> None:
    """A PaymentIntent changed at Stripe (a capture, a cancel), as retrieve and search then show it."""
    intent.update(fields)
    world.stripe.account.modes["test"].indexed.setdefault(intent["id"], []).append((world.clock.now(), dict(intent)))


# == the order file's amount (P2: "amount_cents, an integer, required") =============================================
@pytest.mark.parametrize("raw_amount", ['"1299"', "-1299", "12.99", '"12.99"', "1e400", "1299.5", "false"])
def test_an_amount_as_a_string_negative_fractional_or_bool_is_parked_never_charged(world, raw_amount):
    """P2. Stripe: amount is "A positive integer representing how much to charge in the smallest currency unit"
    (https://docs.stripe.com/api/payment_intents/create#create_payment_intent-amount); JSON's "1299" is a
    string, not a number (https://www.rfc-editor.org/rfc/rfc8259#section-3): refused, never converted."""
    link(world, "alice")
    body = b'{"order_id": "N-1", "amount_cents": ' + raw_amount.encode() + b"}"
    with pytest.raises(keyed.NeedsAttention, match="amount_cents"):
        charge(world, world.upload("alice/n.json", body))
    assert _intents(world) == {} and records(world)[0].status is keyed.Status.NEEDS_ATTENTION


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_a_file_in_another_unicode_encoding_or_with_a_bom_is_parked_never_guessed(world, encoding):
    """P2. RFC 8259 section 8.1: JSON exchanged between systems "MUST be encoded using UTF-8", and
    implementations "MUST NOT add a byte order mark" (https://www.rfc-editor.org/rfc/rfc8259#section-8.1)."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, world.upload("alice/e.json", order("E-1", amount_cents=1250).decode().encode(encoding)))
    assert _intents(world) == {}


def test_a_file_of_exactly_the_size_limit_is_charged_and_one_byte_more_is_parked(world):
    """P2: the limit is ORDER_MAX_BYTES inclusive (keyed_orders.read_exact reads one byte more to tell); JSON
    allows whitespace around values (https://www.rfc-editor.org/rfc/rfc8259#section-2)."""
    link(world, "alice")
    body = order("Z-1", amount_cents=1250)
    exact = body + b" " * (keyed_orders().ORDER_MAX_BYTES - len(body))
    assert charge(world, world.upload("alice/z.json", exact))["status"] == "charged"
    with pytest.raises(keyed.NeedsAttention, match="over 1,000,000 bytes"):
        charge(world, world.upload("alice/z2.json", order("Z-2", amount_cents=1250) + b" " * len(exact)))
    assert len(succeeded(world)) == 1


def keyed_orders() -> Any:
    from idem.core.handlers import keyed_orders as module

    return module


# == currencies (P2: "Currencies: the allow-list CURRENCIES") ========================================================
def test_a_zero_decimal_currency_amount_is_sent_as_written_in_yen_never_scaled(world):
    """P2/P3. Stripe: "All API requests expect amount values in the currency's minor unit"; for zero-decimal
    currencies such as JPY the amount is in yen, not multiplied by 100 (https://docs.stripe.com/currencies#zero-decimal).
    `amount_cents: 1250` in jpy is ¥1,250 at Stripe and in the books: the handler neither scales nor rounds it."""
    link(world, "alice")
    result = charge(world, world.upload("alice/j.json", order("J-1", amount_cents=1250, currency="jpy")),
                    currencies=("jpy",))
    (intent,) = _intents(world).values()
    assert (intent["amount"], intent["currency"]) == (1250, "jpy")
    assert result["amount_cents"] == 1250 and (records(world)[0].cents, records(world)[0].currency) == (1250, "jpy")


@pytest.mark.parametrize("currencies", ["usd,jpy", "eur,kwd", "jpy,bhd"])
def test_currencies_of_different_minor_units_refuse_to_start(currencies):
    """P2. MIN_AMOUNT_CENTS and MAX_AMOUNT_CENTS are one pair of numbers, and Stripe's amounts are in each
    currency's minor unit (JPY: yen, zero-decimal; KWD: fils, three-decimal:
    https://docs.stripe.com/currencies#zero-decimal). With CURRENCIES=usd,jpy one MAX of 100,000 would admit
    US$1,000.00 and ¥100,000, and a JPY order written in "cents" by habit (¥500 as 50000) would be charged
    ¥50,000. So one function serves currencies of one minor unit: a mix refuses to start, naming the decimals."""
    env = {"LEDGER_TABLE": "t", "CURRENCIES": currencies}
    with pytest.raises(keyed.ConfigError, match="mixes minor units") as refused:
        keyed.settings_from_env(env)
    assert "one function per kind" in str(refused.value)


@pytest.mark.parametrize("currencies", ["usd,eur,gbp", "jpy,krw", "kwd,bhd"])
def test_currencies_of_one_minor_unit_share_the_limits(currencies):
    assert keyed.settings_from_env({"LEDGER_TABLE": "t", "CURRENCIES": currencies}).currencies == tuple(
        currencies.split(","))


def test_a_three_decimal_amount_not_in_tens_is_parked_and_one_in_tens_charged(world):
    """P2. Three-decimal currencies: Stripe's payment calls "require the least-significant (last) digit to be 0"
    (https://docs.stripe.com/currencies#three-decimal): 5.124 KWD (5124) would be refused after the send, so it
    is parked before anything is sent; 5.120 KWD (5120) is charged."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="only in tens"):
        charge(world, world.upload("alice/k1.json", order("K-1", amount_cents=5124, currency="kwd")),
               currencies=("kwd",))
    assert _intents(world) == {}
    result = charge(world, world.upload("alice/k2.json", order("K-2", amount_cents=5120, currency="kwd")),
                    currencies=("kwd",))
    (intent,) = _intents(world).values()
    assert result["status"] == "charged" and (intent["amount"], intent["currency"]) == (5120, "kwd")


@pytest.mark.parametrize("currency", ["JPY", "jpy "])
def test_a_currency_outside_the_list_in_any_spelling_is_parked_never_charged(world, currency):
    """P2. Stripe's currency is "Three-letter ISO currency code, in lowercase"
    (https://docs.stripe.com/api/payment_intents/create#create_payment_intent-currency); "JPY" is jpy, outside
    CURRENCIES=usd: parked; "jpy " is no code at all: parked."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="currency|CURRENCIES"):
        charge(world, world.upload("alice/c.json", order("C-1", amount_cents=1250, currency=currency)))
    assert _intents(world) == {}


# == order ids one business may call the same (P1) ===================================================================
@pytest.mark.parametrize("first, second", [("1001", "01001"), ("A-1001", "a-1001"), ("A-1001", "A\u20101001")])
def test_two_order_ids_that_differ_as_strings_are_two_orders_each_charged_once(world, first, second):
    """P1, decided: an order is (account, `order_id`), and the id is compared as JSON compares strings, code
    unit by code unit (https://www.rfc-editor.org/rfc/rfc8259#section-8.3). Leading zeros, case or a Unicode
    hyphen (U+2010, NFC leaves it: https://unicode.org/reports/tr15/) may mean one order to one business and
    two to another; the handler cannot know, so it charges each once and never folds them (folding "A-1" and
    "a-1" could refuse a real second order). The reconciliation is where two such charges must be seen
    (tests/test_reconcile_review_round5.py::test_pins_gap_two_order_ids_one_business_calls_the_same_are_no_finding)."""
    link(world, "alice")
    assert charge(world, world.upload("alice/1.json", order(first, amount_cents=1250)))["status"] == "charged"
    assert charge(world, world.upload("alice/2.json", order(second, amount_cents=1250)))["status"] == "charged"
    assert charge(world, world.upload("alice/3.json", order(first, amount_cents=1250)))["status"] == "duplicate"
    assert len(succeeded(world)) == 2


# == Stripe's answers (P2, "answers by meaning") =====================================================================
@pytest.mark.parametrize("fault", ["rate_limit", "rate_limit_400", "lock_timeout", "in_flight", "unavailable",
                                   "drop_before"])
def test_an_answer_that_executed_nothing_is_retried_with_the_same_key_and_charged_once(world, fault):
    """P1/P2. A 429 rate_limit ("Too many requests hit the API too quickly", https://docs.stripe.com/rate-limits),
    a lock_timeout, a 409 for the key in use ("The request conflicts with another request (perhaps due to using
    the same idempotent key)", https://docs.stripe.com/api/errors), a 503: Stripe "save[s] results only after
    the execution of an endpoint begins" (https://docs.stripe.com/idempotency), so nothing is saved and the same
    key may be sent again. The invocation fails for Lambda's retry (never parked), the record is released at
    once, and the retry charges once."""
    link(world, "alice")
    obj = world.upload("alice/R-1.json", order("R-1", amount_cents=1250))
    world.stripe.inject(fault)
    with pytest.raises(Exception) as first:
        charge(world, obj)
    assert not isinstance(first.value, keyed.NeedsAttention)
    assert records(world)[0].status is keyed.Status.IN_PROGRESS and _intents(world) == {}
    assert charge(world, obj)["status"] == "charged"
    assert len(succeeded(world)) == 1 and records(world)[0].status is keyed.Status.DONE


def test_an_idempotency_error_for_other_parameters_is_parked_never_retried_under_a_new_key(world):
    """P1. "The idempotency layer compares incoming parameters to those of the original request and errors if
    they're not the same" (https://docs.stripe.com/idempotency): a 400 idempotency_error is final for the key,
    and a new key could charge twice; parked, counted, one PaymentIntent."""
    link(world, "alice")
    obj = world.upload("alice/I-1.json", order("I-1", amount_cents=1250))
    world.stripe.inject("drop_after")
    with pytest.raises(Exception) as lost:
        charge(world, obj)
    assert not isinstance(lost.value, keyed.NeedsAttention)
    (stuck,) = records(world)
    world.dynamodb.update_item(TableName=world.ledger_table, Key={"pk": {"S": stuck.key}},
                               UpdateExpression="SET payment_method = :m",
                               ExpressionAttributeValues={":m": {"S": "pm_card_mastercard"}})  # other parameters
    with pytest.raises(keyed.NeedsAttention, match="idem settle") as parked:
        charge(world, obj)
    assert "nothing was charged" not in str(parked.value)
    assert len(_intents(world)) == 1 and records(world)[0].status is keyed.Status.NEEDS_ATTENTION


@pytest.mark.parametrize("fault, code", [("card_declined", "generic_decline"),
                                         ("insufficient_funds", "insufficient_funds"),
                                         ("expired_card", "expired_card"),
                                         ("authentication_required", "authentication_required")])
def test_a_card_error_from_stripe_is_declined_for_good_with_its_code_and_no_money_moved(world, fault, code):
    """P1/P2: "a hard decline (card_error) is final (declined)"; a decline is a 402 card_error whose
    PaymentIntent is left requires_payment_method (https://docs.stripe.com/declines/codes,
    https://docs.stripe.com/api/errors). Off-session, authentication_required is a decline: no one is there
    to authenticate (https://docs.stripe.com/payments/paymentintents/lifecycle). A copy of the event is
    answered from the record, no second attempt at the card."""
    link(world, "alice")
    obj = world.upload("alice/D-1.json", order("D-1", amount_cents=1250))
    world.stripe.inject(fault)
    result = charge(world, obj)
    assert (result["status"], result["decline_code"]) == ("declined", code)
    assert charge(world, obj)["status"] == "declined"
    assert len(_intents(world)) == 1 and succeeded(world) == []
    assert records(world)[0].status is keyed.Status.DECLINED


def test_a_requires_action_answer_is_declined_and_holds_no_money(world):
    """P1/P3: off-session, a PaymentIntent left `requires_action` moved no money ("If the payment requires
    additional actions, such as authenticating with 3D Secure, the PaymentIntent has a status of
    requires_action", https://docs.stripe.com/payments/paymentintents/lifecycle); the order is declined, no line."""
    link(world, "alice")
    world.stripe.inject("requires_action")
    result = charge(world, world.upload("alice/A-1.json", order("A-1", amount_cents=1250)))
    assert result["status"] == "declined" and result["code"] == "requires_action"
    assert succeeded(world) == [] and records(world)[0].status is keyed.Status.DECLINED


class Authorizing:
    """The loopback provider, where the charge is answered `requires_capture` (an account or a PaymentIntent
    set to capture later): the money is held on the card, not taken."""

    def __init__(self, world: Any) -> None:
        self.inner, self.world = world.provider(), world

    def charge(self, **request: Any) -> Any:
        made = self.inner.charge(**request)
        restatus(self.world, _intents(self.world)[made.id], status="requires_capture", amount_received=0,
                 amount_capturable=int(request["amount"]))
        return dataclasses.replace(made, status="requires_capture")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_requires_capture_answer_is_recorded_pending_not_booked(world):
    """P1/P3. `requires_capture` holds the money; it is not taken until captured, and "If the authorization
    expires before you capture the funds, the funds are released and the payment status changes to canceled"
    (https://docs.stripe.com/payments/capture-later: 5 to 7 days for cards). It counts as a charge for P1 (never
    charge again), but booking it `done` writes a line for money Stripe may never take, and the reconciliation
    (compare.UNSETTLED) and the runbook (`idem settle`) both call it unsettled: it is recorded `pending`, as
    `processing` is, and booked when it settles. (Was booked `done`: fixed.)"""
    link(world, "alice")
    obj = world.upload("alice/H-1.json", order("H-1", amount_cents=1250))
    result = charge(world, obj, provider=Authorizing(world))
    (record,) = records(world)
    assert (result["status"], record.status) == ("pending", keyed.Status.PENDING)
    assert charge(world, obj)["status"] == "pending" and len(_intents(world)) == 1


def test_a_requires_capture_charge_found_past_the_key_window_is_recorded_pending(world):
    """P1/P3, the same rule through the look-up (https://docs.stripe.com/payments/capture-later): a held charge
    found by its key a day later is recorded pending, not booked. (Was booked `done`: fixed.)"""
    link(world, "alice")
    commit_refused(world, world.upload("alice/H-2.json", order("H-2", amount_cents=1250)))
    (intent,) = _intents(world).values()
    restatus(world, intent, status="requires_capture", amount_received=0, amount_capturable=1250)
    world.clock.advance(25 * HOUR)
    prune_idempotency_keys(world.stripe.account)
    result = charge(world, world.upload("alice/H-2.json", order("H-2", amount_cents=1250)))
    assert (result["status"], records(world)[0].status) == ("pending", keyed.Status.PENDING)
    assert len(_intents(world)) == 1


# == corrections: one order uploaded again with other terms (P1/P2) ==================================================
def test_a_correction_of_a_pending_order_is_parked_not_answered_pending(world):
    """P2: "A duplicate ... whose customer, amount or currency differs from the stored charge is parked (refund or
    charge the difference by hand), never charged again". A charge still `processing` is a charge of the order
    ("can still fail", https://docs.stripe.com/payments/paymentintents/lifecycle), and its record keeps the
    amount, currency and customer; an upload asking 1300 for it must be parked like a done one's, not answered
    `pending` as if it asked what was charged (the correction would be lost with no count). (Was answered
    `pending`: fixed.)"""
    link(world, "alice")
    world.stripe.inject("processing")
    assert charge(world, world.upload("alice/P-1.json", order("P-1", amount_cents=1250)))["status"] == "pending"
    assert charge(world, world.upload("alice/P-1.json", order("P-1", amount_cents=1250)))["status"] == "pending"
    with pytest.raises(keyed.NeedsAttention, match="charged 1250 already"):
        charge(world, world.upload("alice/P-1-fixed.json", order("P-1", amount_cents=1300)))
    assert len(_intents(world)) == 1 and records(world)[0].status is keyed.Status.PENDING


def test_a_correction_uploaded_after_a_lost_answer_is_parked_never_a_second_charge(world):
    """P1/P2: the first upload charged 1250, its answer lost (the record released, sent); a corrected upload
    asking 1300 sends other parameters under the order's key, which Stripe refuses
    (https://docs.stripe.com/idempotency: "errors if they're not the same"): parked saying a charge may exist,
    never "nothing was charged"; one PaymentIntent, of the first terms."""
    link(world, "alice")
    world.stripe.inject("drop_after")
    with pytest.raises(Exception) as lost:
        charge(world, world.upload("alice/K-1.json", order("K-1", amount_cents=1250)))
    assert not isinstance(lost.value, keyed.NeedsAttention)
    with pytest.raises(keyed.NeedsAttention) as parked:
        charge(world, world.upload("alice/K-1-fixed.json", order("K-1", amount_cents=1300)))
    assert "nothing was charged" not in str(parked.value)
    assert [i["amount"] for i in _intents(world).values()] == [1250]


def test_a_correction_of_a_declined_order_is_answered_declined_never_charged(world):
    """P1/P2: a decline is final for the order's key ("Subsequent requests with the same key return the same
    result", https://docs.stripe.com/idempotency): an upload of the declined order asking another amount is
    answered declined from the record, no card attempt; a new order id is the way to charge again."""
    link(world, "alice")
    world.stripe.inject("card_declined")
    assert charge(world, world.upload("alice/X-1.json", order("X-1", amount_cents=1250)))["status"] == "declined"
    assert charge(world, world.upload("alice/X-1b.json", order("X-1", amount_cents=900)))["status"] == "declined"
    assert len(_intents(world)) == 1 and succeeded(world) == []


# == accounts: the key's first folder (P2) ===========================================================================
@pytest.mark.parametrize("account", ["al ice", "Ālice", "alice.", "..", "al'ice", "al%20ice", "ali\u200bce"])
def test_an_account_folder_with_odd_characters_is_its_own_account_charged_to_its_own_link(world, account):
    """P2: S3 keys may hold any UTF-8 character (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html);
    each distinct first folder is its own account, charged only to its own link; "alice" (linked too) is never
    charged for it, and an account with a quote breaks no search (the handler searches by the key's hash)."""
    alice = link(world, "alice")
    odd = link(world, account, customer_id="cus_odd")
    result = charge(world, world.upload(f"{account}/o.json", order("O-1", amount_cents=1250)))
    assert result["status"] == "charged"
    assert [i["customer"] for i in _intents(world).values()] == [odd] and odd != alice
    assert records(world)[0].customer == odd


def test_an_account_folder_over_stripes_metadata_limit_cannot_be_linked_and_is_parked(world):
    """P2/P3. Stripe's metadata values are "up to 500 characters long" (https://docs.stripe.com/api/metadata);
    the handler cuts `idem_account` to 500, so two accounts sharing their first 500 characters would be one
    account to the reconciliation. S3 keys run to 1,024 bytes
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html), so such a folder can exist; the
    runbook's `idem customers link` refuses an account over 200 characters, so it has no link and is parked
    before any charge."""
    from idem.core import customers

    account = "a" * 501
    with pytest.raises(customers.CustomerError, match="200 characters"):
        link(world, account, customer_id="cus_long")
    with pytest.raises(keyed.NeedsAttention, match="no linked customer") as parked:
        charge(world, world.upload(f"{account}/o.json", order("L-1", amount_cents=1250)))
    assert "nothing was charged" in str(parked.value) and _intents(world) == {}


def test_a_key_of_1024_bytes_is_charged_once_within_stripes_metadata_limit(world):
    """P1/P3: a key of 1,024 bytes (S3's maximum) goes into `metadata.key` and `reference`, cut to Stripe's 500
    characters (https://docs.stripe.com/api/metadata; the loopback refuses longer, as Stripe does), and its
    account and order stay whole: charged once, a copy answered duplicate."""
    link(world, "alice")
    key = "alice/" + "k" * (1024 - len("alice/") - len(".json")) + ".json"
    assert len(key.encode()) == 1024
    assert charge(world, world.upload(key, order("M-1", amount_cents=1250)))["status"] == "charged"
    assert charge(world, world.upload(key, order("M-1", amount_cents=1250)))["status"] == "duplicate"
    (intent,) = _intents(world).values()
    assert all(len(v) <= 500 for v in intent["metadata"].values())
    assert (intent["metadata"]["idem_account"], intent["metadata"]["order_id"]) == ("alice", "M-1")


# == who pays, between attempts (P2) ==================================================================================
def test_an_order_of_an_unlinked_account_charged_but_unbooked_is_never_charged_to_anyone_else(world):
    """P1/P2: the account's link removed (a mapping deleted) between a lost answer and its retry: the retry
    finds no customer and is refused (never another customer, never a new key); the charge made stays the
    only one, for the reconciliation to book (`unbooked`) or refund."""
    alice = link(world, "alice")
    obj = world.upload("alice/U-1.json", order("U-1", amount_cents=1250))
    world.stripe.inject("drop_after")
    with pytest.raises(Exception) as lost:
        charge(world, obj)
    assert not isinstance(lost.value, keyed.NeedsAttention)
    world.dynamodb.delete_item(TableName=world.ledger_table, Key={"pk": {"S": "account#alice"}})
    with pytest.raises(keyed.NeedsAttention, match="no linked customer") as refused:
        charge(world, obj)
    assert "nothing was charged" not in str(refused.value)
    assert [i["customer"] for i in _intents(world).values()] == [alice]


# == time (P1, "the key's age rule") =================================================================================
def test_a_first_upload_whose_event_is_older_than_the_key_window_is_searched_for_before_its_charge(world):
    """P1: an event 25 hours old (a failure queue redriven the next day) may be a copy of an attempt whose record
    was lost; Stripe may have pruned its key (https://docs.stripe.com/idempotency): the handler searches
    before the charge, finds none, and charges once."""
    link(world, "alice")
    obj = world.upload("alice/T-1.json", order("T-1", amount_cents=1250))
    world.clock.advance(25 * HOUR)
    searched: list[str] = []
    provider = world.provider()
    real = provider.find_charges
    provider.find_charges = lambda reference, key: searched.append(key) or real(reference, key)  # type: ignore[method-assign]
    assert charge(world, obj, provider=provider)["status"] == "charged"
    assert len(searched) == 1 and len(succeeded(world)) == 1


def test_the_order_files_json_numbers_are_read_as_written_not_through_a_float(world):
    """P2: 2**53 + 1 cents is a whole number JSON may carry (https://www.rfc-editor.org/rfc/rfc8259#section-6:
    beyond 2**53 "the software that receives" it may lose precision); Python reads it exactly, and a value
    above MAX_AMOUNT_CENTS is parked whatever its size, never rounded into the limits."""
    link(world, "alice")
    body = json.dumps({"order_id": "F-1", "amount_cents": 2**53 + 1}).encode()
    with pytest.raises(keyed.NeedsAttention, match=str(2**53 + 1)):
        charge(world, world.upload("alice/f.json", body))
    assert _intents(world) == {}


# == more of P2: the limits, the card, who saved it ===================================================================
@pytest.mark.parametrize("cents, charged", [(49, False), (50, True), (100_000, True), (100_001, False)])
def test_the_amount_limits_are_inclusive_at_both_ends(world, cents, charged):
    """P2: "MIN_AMOUNT_CENTS (default 50, Stripe's minimum charge in USD,
    https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts) and MAX_AMOUNT_CENTS (default 100000)
    per order; outside them: parked": 50 and 100,000 are inside."""
    link(world, "alice")
    obj = world.upload("alice/B-1.json", order("B-1", amount_cents=cents))
    if charged:
        assert charge(world, obj)["status"] == "charged"
    else:
        with pytest.raises(keyed.NeedsAttention, match="MIN_AMOUNT_CENTS|MAX_AMOUNT_CENTS"):
            charge(world, obj)
    assert len(succeeded(world)) == int(charged)


def test_a_file_naming_another_customers_saved_card_charges_no_one(world):
    """P2: "The file never chooses who pays". A file may name a `payment_method`, but Stripe charges a customer
    only with a method attached to that customer ("The payment method must be attached to the customer",
    https://docs.stripe.com/payments/save-and-reuse): alice's order naming bob's card is refused, parked;
    neither is charged."""
    link(world, "alice")
    bob = link(world, "bob")
    bobs_card = world.stripe.account.attach("test", "pm_card_mastercard", bob)["id"]
    with pytest.raises(keyed.NeedsAttention):
        charge(world, world.upload("alice/V-1.json", order("V-1", amount_cents=1250, payment_method=bobs_card)))
    assert succeeded(world) == []


def test_an_order_overwritten_before_its_event_is_read_is_charged_once_on_the_new_terms():
    """P1/P2 on an unversioned bucket: the handler reads the upload's own bytes by its eTag (`If-Match`,
    https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html: 412 when it no longer matches); the first
    event of an order overwritten before it ran finds other bytes and is refused ("nothing was charged"); the
    second event's upload, the file as it stands, is charged once."""
    from idem.sim.stripe.server import loopback_stripe
    from idem.sim.world import LocalWorld

    with LocalWorld(link_customers=False, versioned=False) as w, loopback_stripe(w) as server:
        w.stripe = server
        link(w, "alice")
        first = w.upload("alice/O-1.json", order("O-1", amount_cents=1250))
        second = w.upload("alice/O-1.json", order("O-1", amount_cents=1300))
        with pytest.raises(keyed.NeedsAttention, match="overwritten"):
            charge(w, first)
        assert charge(w, second)["status"] == "charged"
        assert [i["amount"] for i in succeeded(w)] == [1300]


def test_a_linked_customer_with_no_saved_card_is_parked_unsent_and_charged_once_after_a_card_is_saved(world):
    """P1/P2/P4. No default payment method: nothing can be sent, and nothing was ("We save results only after the
    execution of an endpoint begins", https://docs.stripe.com/idempotency); the order is parked saying so
    ("nothing was charged"), and, as every park before a charge, taken over by the order's next upload once a card
    is saved (docs/money_contract.md, "Parked before anything was sent"): charged once."""
    from idem.sim.stripe.server import seed_customer
    from idem.core import customers

    customer, _ = seed_customer(world.stripe, customer_id="cus_alice", default=False)
    customers.link(world.dynamodb, world.ledger_table, "alice", customer, reason="T-5", caller="arn:aws:iam::1:user/o",
                   now=world.clock.now())
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, world.upload("alice/Q-1.json", order("Q-1", amount_cents=1250)))
    assert _intents(world) == {} and records(world)[0].unsent is True
    card = world.stripe.account.attach("test", "pm_card_visa", customer)["id"]
    world.stripe.account.modes["test"].customers[customer]["invoice_settings"]["default_payment_method"] = card
    assert charge(world, world.upload("alice/Q-1.json", order("Q-1", amount_cents=1250)))["status"] == "charged"
    assert len(succeeded(world)) == 1


def test_an_account_linked_to_a_customer_stripe_does_not_hold_is_parked_unsent_then_charged_once(world):
    """P2/P4: a link naming a customer Stripe has no such object for (a typo in `idem customers link`, another
    mode's customer) is answered 404 resource_missing on the read of its saved method
    (https://docs.stripe.com/error-codes/resource-missing): nothing was sent, so the order is parked saying so, and
    once the link is fixed the order's next upload takes it over and charges it once."""
    from idem.core import customers

    customers.link(world.dynamodb, world.ledger_table, "alice", "cus_typo", reason="T-6", caller="arn:aws:iam::1:user/o",
                   now=world.clock.now())
    obj = world.upload("alice/G-1.json", order("G-1", amount_cents=1250))
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, obj)
    assert _intents(world) == {}
    alice = link(world, "alice")
    assert charge(world, obj)["status"] == "charged"
    assert [i["customer"] for i in succeeded(world)] == [alice]


def test_a_correction_uploaded_while_the_first_upload_is_charging_waits_then_is_parked(world):
    """P1/P2: a second upload of one order with another amount, arriving while the first holds the order's lease,
    is turned away for a retry (WorkInProgress: DynamoDB's conditional put lets one claim win,
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html); its
    retry, once the first is booked, asks other terms of a charged order: parked, one charge of the first terms."""
    link(world, "alice")
    correction = world.upload("alice/W-1-fixed.json", order("W-1", amount_cents=1300))
    seen: list[BaseException] = []

    class Meanwhile:
        def __init__(self) -> None:
            self.inner = world.provider()

        def charge(self, **request: Any) -> Any:
            try:
                charge(world, correction)
            except Exception as turned_away:  # noqa: BLE001 - what the correction met, asserted below
                seen.append(turned_away)
            return self.inner.charge(**request)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    assert charge(world, world.upload("alice/W-1.json", order("W-1", amount_cents=1250)),
                  provider=Meanwhile())["status"] == "charged"
    assert [type(e) for e in seen] == [keyed.WorkInProgress]
    with pytest.raises(keyed.NeedsAttention, match="charged 1250 already"):
        charge(world, correction)
    assert [i["amount"] for i in succeeded(world)] == [1250]


def test_no_record_that_stands_for_money_or_a_person_carries_a_ttl(world):
    """P1/P3: "If the epoch time value stored in the attribute is less than the current time, the item is marked as
    expired and subsequently deleted" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html).
    The books (done), a charge not settled (pending), a decline and a park each stand for a charge or a decision
    for the order's whole life: none carries `expires_at`, so TTL never deletes one (and a copy of the event a
    month later is answered from it)."""
    link(world, "alice")
    assert charge(world, world.upload("alice/1.json", order("T-1", amount_cents=1250)))["status"] == "charged"
    world.stripe.inject("processing")
    assert charge(world, world.upload("alice/2.json", order("T-2", amount_cents=1250)))["status"] == "pending"
    world.stripe.inject("card_declined")
    assert charge(world, world.upload("alice/3.json", order("T-3", amount_cents=1250)))["status"] == "declined"
    with pytest.raises(keyed.NeedsAttention):
        charge(world, world.upload("alice/4.json", order("T-4", amount_cents=999_999)))
    items = world.dynamodb.scan(TableName=world.ledger_table)["Items"]
    orders = [i for i in items if i["pk"]["S"].startswith("charge#")]
    assert sorted(i["status"]["S"] for i in orders) == ["declined", "done", "needs_attention", "pending"]
    assert [i["pk"]["S"] for i in orders if "expires_at" in i] == []
