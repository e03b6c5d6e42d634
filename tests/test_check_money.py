"""Who pays and how much (docs/one_charge_per_order.md, "Who pays and how much"): the check reads each
charge's amount, currency and customer, not only how many there are. A handler that charges every
order once, but one order two prices (a fee read from the calendar at charge time) or the first
account's customer for every account, moves money wrongly while its books agree with the provider;
counting alone said "holds" on both (tests/handlers/fee_by_year.py, customer_memo.py). A default
price for a misspelt field (default_price.py) is said in a note: the check cannot know a handler's
pricing rule."""
from __future__ import annotations

import json
from pathlib import Path

from idem.explore.check import check_handler
from idem.explore.families import accounts
from idem.explore.judge import money
from idem.explore.run import runner

HANDLERS = Path(__file__).parent / "handlers"
ALICE, BOB = "check00001/order-1.json", "other00001/order-1.json"


def target(name: str) -> str:
    return f"{HANDLERS / name}.py:lambda_handler"


def charge(cents: object = 1250, currency: str = "usd", customer: str = "cus_check00001") -> dict[str, object]:
    return {"amount": cents, "currency": currency, "customer": customer}


def test_a_default_price_for_a_misspelt_field_holds_with_a_note_of_the_price_its_file_says():
    # the check cannot know a handler's pricing rule (a fixed fee is no bug), so it says what it saw
    report = check_handler(target("default_price"), retries=(0,), workers=1)
    assert report.holds, report.explain()
    (note,) = report.notes
    assert note.startswith("note: the clean run charged 1000 usd where the order file says 1250 usd. A handler")
    assert note in report.explain() and report.to_json()["notes"] == [note]
    assert not check_handler(target("linked_customer"), retries=(0,), workers=1).notes  # its price is the file's


def test_pins_bug_a_fee_looked_up_at_charge_time_charges_one_order_two_prices_across_midnight():
    report = check_handler(target("fee_by_year"), retries=(0,), workers=1)
    assert not report.holds
    assert {r.verdict for r in report.broken} == {"silent_mismatch"}, report.explain()
    for result in report.broken:
        assert "charged 1295 usd where the clean run charged 1280 usd for the same order file" in result.findings
    assert report.notes and "charged 1280 usd where the order file says 1250 usd" in report.notes[0]


def test_pins_bug_a_customer_kept_from_the_first_account_charges_alice_for_bobs_order(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "accounts")
    report = check_handler(target("customer_memo"), retries=(0,), workers=1)
    assert not report.holds
    assert report.broken and {r.schedule.dimension for r in report.broken} == {"accounts"}, report.explain()
    for result in report.broken:  # whichever account's order ran first, its customer paid for both
        assert result.verdict == "double_charge"
        assert any("was charged 2 times for 1 upload of that account" in f for f in result.findings), result.findings


def test_the_same_handler_reading_the_mapping_at_each_upload_holds_in_the_accounts_family(monkeypatch):
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "accounts")
    report = check_handler(target("linked_customer"), retries=(0,), workers=1)
    assert report.holds, report.explain()
    assert report.dimensions()["accounts"] and not any(r.findings for r in report.results)


def test_a_charge_is_held_to_the_amount_and_currency_the_clean_run_charged():
    prices = money.clean_prices([(1250, "usd")])
    assert prices == [runner.ORDER_PRICE]
    assert money.judge([charge()], prices, None, 1) == (None, [])
    assert money.judge([charge(currency="USD")], prices, None, 1) == (None, [])  # Stripe lowercases its codes
    assert money.judge([charge(1000)], prices, None, 1) == (
        "silent_mismatch", ["charged 1000 usd where the clean run charged 1250 usd for the same order file"])
    assert money.judge([charge(currency="eur")], prices, None, 1)[0] == "silent_mismatch"
    assert money.judge([charge(True)], [money.Price(1, "usd")], None, 1)[0] == "silent_mismatch"  # a bool is no amount
    assert money.judge([charge(1000)], None, None, 1) == (None, [])  # no clean charge to hold it to
    assert money.clean_prices([]) is None and money.clean_prices([("12.50", "usd")]) is None
    assert money.judge([charge(currency="eur")], [money.Price(1250, None)], None, 1) == (None, [])


def test_who_pays_is_the_customer_linked_to_an_account_of_the_schedule():
    alice, bob = (accounts.customer_for(accounts.account_of(key)) for key in (ALICE, BOB))
    both = [ALICE, BOB]
    assert money.judge([charge(customer=alice), charge(customer=bob)], None, both, 1) == (None, [])
    verdict, findings = money.judge([charge(customer=alice), charge(customer=alice)], None, both, 1)
    assert verdict == "double_charge"
    assert findings == [f"{alice}, the customer linked to account check00001, was charged 2 times for 1 upload "
                        "of that account: another account's order was charged to it, or its own twice"]
    verdict, findings = money.judge([charge(customer="cus_someone")], None, [ALICE], 1)
    assert (verdict, findings) == ("silent_mismatch", [
        "charged cus_someone, the customer linked to none of this schedule's accounts (check00001)"])
    # the clean run (no bound yet) and a function the check links no customer for are not counted
    assert money.judge([charge(customer=alice)] * 2, None, [ALICE], 0) == (None, [])
    assert money.judge([charge(customer="cus_someone")], None, None, 1) == (None, [])
    # two uploads of one account (a second order at the same name) may each be charged
    assert money.judge([charge(customer=alice)] * 2, None, [ALICE, ALICE], 1) == (None, [])


def test_a_wrong_charge_breaks_a_verdict_that_did_not_and_a_customer_charged_twice_outranks_other_breaks():
    assert money.worse("exactly_once", None) == "exactly_once"
    assert money.worse("exactly_once", "silent_mismatch") == "silent_mismatch"
    assert money.worse("failed_visibly", "silent_mismatch") == "silent_mismatch"
    assert money.worse("silent_loss", "silent_mismatch") == "silent_loss"
    assert money.worse("silent_loss", "double_charge") == "double_charge"


def test_the_price_of_an_order_file_is_its_integer_amount_and_its_currency():
    assert money.price_of(runner.order_body(7)) == runner.ORDER_PRICE == money.Price(1250, "usd")
    assert money.price_of(json.dumps({"order_id": "A", "amount_cents": 500}).encode()) == money.Price(500, None)
    for body in (b"not json", b"[1]", json.dumps({"amount": 5}).encode(), json.dumps({"amount_cents": "5"}).encode()):
        assert money.price_of(body) is None
    assert money.prices_of([runner.order_body(1), b"a,b\n"]) is None  # one file states none: no note
    assert money.file_note([(1250, "usd")], [runner.ORDER_PRICE]) == []
    assert money.file_note([(1000, "usd")], None) == [] and money.file_note([], [runner.ORDER_PRICE]) == []


def test_over_stripes_sdk_each_linked_customer_exists_so_the_handler_to_copy_holds_and_a_kept_one_breaks(monkeypatch):
    # the runbook links a customer that exists at Stripe: the loopback Stripe has each one the check
    # links, with a saved default card (before, the clean run failed: "No such customer: 'cus_check99999'")
    monkeypatch.setenv("IDEM_CHECK_FAMILIES", "accounts")
    report = check_handler("idem.core.handlers.keyed:lambda_handler", retries=(0,), workers=1, provider="stripe")
    assert report.holds and report.target.provider == "stripe", report.explain()
    # every order charged once to its own customer; Bob's file naming Alice's customer is parked (visibly)
    assert {r.verdict for r in report.results if r.schedule.later.how != "names_customer"} == {"exactly_once"}
    assert {r.verdict for r in report.results if r.schedule.later.how == "names_customer"} == {"failed_visibly"}
    memo = check_handler(target("customer_memo"), retries=(0,), workers=1, provider="stripe")
    assert "double_charge" in memo.tally(), memo.explain()
