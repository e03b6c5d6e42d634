"""What chapters 03, 06 and 12 run to teach the trust boundary and the key's age
(docs/money_contract.md), on the handler to copy over moto and the loopback Stripe."""
from __future__ import annotations

from pathlib import Path

from idem.lessons.scribes import money

SOURCES = Path(__file__).resolve().parent.parent / "notebooks" / "source"


def _text(prefix: str) -> str:
    (path,) = SOURCES.glob(f"{prefix}_*.py")
    return " ".join(line.lstrip("# ").strip() for line in path.read_text(encoding="utf-8").splitlines())


def test_who_pays_is_the_accounts_linked_customer_and_every_other_file_is_parked_uncharged():
    outcomes = {o.upload: o for o in money.who_pays()}
    assert outcomes["alice/1001.json"].charged == "cus_alice 1250 cents"
    assert outcomes["bob/1001.json"].charged == "cus_bob 900 cents"  # the same order id, another account
    for name in ("bob/B-7.json", "carol/C-1.json", "alice/A-2.json", "alice/A-3.json"):
        assert outcomes[name].charged == "nothing" and outcomes[name].reason, name
    assert "never chooses who pays" in outcomes["bob/B-7.json"].reason
    assert "idem customers link carol" in outcomes["carol/C-1.json"].reason
    assert "unknown field 'amount'" in outcomes["alice/A-2.json"].reason
    assert "MAX_AMOUNT_CENTS" in outcomes["alice/A-3.json"].reason


def test_an_order_resent_once_its_key_is_23_hours_old_is_searched_for_and_never_charged_twice():
    rows = {r.resent_after_h: r for r in money.key_age_rows()}
    assert money.search_from_hours() == 23
    assert [rows[h].searched_stripe for h in (1, 22.5, 23.5, 25)] == ["no", "no", "yes", "yes"]
    assert all(r.payment_intents == 1 and r.record == "done" for r in rows.values())
    assert all(r.first_attempt_at_s == 0 for r in rows.values())  # kept through two takeovers
    assert rows[25].keys_stripe_pruned == 1 and rows[25].charge_calls == 0 and rows[25].handler_says == "found"
    assert rows[1].charge_calls == 1  # young key: Stripe's replay, no search


def test_chapter_03_teaches_who_pays_and_the_strict_file_on_the_handler():
    three = _text("03")
    assert "idem customers link ACCOUNT cus_... --reason TEXT" in three and "money.who_pays()" in three
    assert "MAX_AMOUNT_CENTS" in three and "`CURRENCIES`" in three
    assert "PRICE_CENTS`" not in three.replace("PRICE_PER_UPLOAD_CENTS`", "")


def test_chapter_06_teaches_the_keys_age_and_the_parameters_sent_on_the_handler():
    six = _text("06")
    assert "first_attempt_at" in six and "money.key_age_rows()" in six
    assert "https://docs.stripe.com/api/payment_intents/search" in six
    assert "money.payment_intent_request()" in six


def test_the_payment_intent_request_names_the_linked_customer_and_carries_the_key():
    rows = {r["parameter"]: r["value"] for r in money.payment_intent_request()}
    assert rows["customer"] == "cus_alice" and rows["amount"] == "1250" and rows["currency"] == "usd"
    assert rows["metadata[idempotency_key]"] == rows["Idempotency-Key (a header)"]
    assert rows["metadata[idem_account]"] == "alice"


def test_chapter_12_ships_the_trust_boundary_and_the_keys_age_without_a_fallback_price():
    twelve = _text("12")
    assert "idem customers link ACCOUNT cus_... --reason TEXT --stack STACK --yes" in twelve
    assert "first_attempt_at" in twelve and "money.resent_later(25)" in twelve and "money.who_pays()" in twelve
    assert "UploaderRoleArn" in twelve and "PRICE_PER_UPLOAD_CENTS" in twelve
    assert "PRICE_CENTS`" not in twelve.replace("PRICE_PER_UPLOAD_CENTS`", "")
    assert "the customer that the order names" not in twelve and "The key guards the first 24 hours" not in twelve
