"""A payments reviewer's seventh round on the handler to copy (issue 39; the webhook's and the reconciliation's
probes are tests/test_reconcile_review_round7.py), on moto and the loopback Stripe: cases rounds 1-6 did not try.

Each test names the property of docs/money_contract.md it probes (P1: one succeeded charge per (account,
order) for the order's life; P2: the amount, currency and customer from the trusted source, or parked; P3:
the books equal Stripe; P4: nothing parked without a count) and the published rule it rests on. A probe that
holds is a plain regression test; one that found a defect was fixed (its docstring says so, and the commit
names it); one left open is `test_pins_gap_...`, asserting today's behaviour and saying what the fix is."""
from __future__ import annotations

import unicodedata

import pytest

from idem.core.handlers import keyed
from test_handler_review_round4 import _intents, charge, link, order, records
from test_handler_review_round6 import no_real_sleep, succeeded, world  # noqa: F401 (fixtures)

HOUR = 3600


def raw_order(order_id: str, amount: str, currency: str = "") -> bytes:
    """An order file with its amount written as given, byte for byte (JSON's number grammar decides)."""
    more = f', "currency": "{currency}"' if currency else ""
    return ('{"order_id": "' + order_id + '", "amount_cents": ' + amount + more + "}").encode()


# == the amount as written (P2: "an integer, required"; JSON's grammar, RFC 8259 section 6) ===========================
@pytest.mark.parametrize("amount", ["+1250", "01250", "1_250", "0x4E2", ".5e3", "1250.", "1,250", "１２５０",
                                    "12\u00a050"])
def test_an_amount_json_does_not_allow_is_parked_never_charged(world, amount):  # noqa: F811 (the fixture)
    """P2. JSON's number is `[ minus ] int [ frac ] [ exp ]`, "A plus sign is not allowed", "Leading zeros are not
    allowed" (https://www.rfc-editor.org/rfc/rfc8259#section-6): `+1250`, `01250`, a digit separator, hex, a
    bare fraction, full-width digits, a thousands separator are no JSON number. Such a file names no amount; it is
    parked saying nothing was charged, never read as 1250 by a lenient parser."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, world.upload("alice/N-1.json", raw_order("N-1", amount)))
    assert _intents(world) == {} and records(world)[0].status is keyed.Status.NEEDS_ATTENTION


def test_whitespace_around_a_json_number_is_the_same_amount(world):  # noqa: F811 (the fixture)
    """P2. "Insignificant whitespace is allowed before or after any of the six structural characters"
    (https://www.rfc-editor.org/rfc/rfc8259#section-2): `"amount_cents":\\n\\t 1250 \\r\\n}` is 1250, charged once."""
    link(world, "alice")
    body = b'{"order_id": "W-1",\n "amount_cents":\n\t 1250 \r\n}'
    assert charge(world, world.upload("alice/W-1.json", body))["status"] == "charged"
    (intent,) = succeeded(world)
    assert intent["amount"] == 1250


@pytest.mark.parametrize("currency, low, high, cases", [
    ("jpy", 50, 100_000, [(50, True), (49, False), (100_000, True), (100_001, False)]),  # zero-decimal: yen
    ("kwd", 100, 10_000, [(100, True), (90, False), (10_000, True), (10_010, False), (9_995, False)]),  # fils
    ("usd", 50, 99_999_999, [(99_999_999, True), (100_000_000, False)]),  # Stripe's usd maximum, 8 digits
])
def test_the_limits_hold_at_and_around_each_end_in_every_minor_unit(world, currency, low, high, cases):  # noqa: F811
    """P2. "All API requests expect amount values in the currency's minor unit"; three-decimal amounts "require the
    least-significant (last) digit to be 0"; the maximum "amount value supports up to eight digits (e.g., a value of
    99999999 for a USD charge of $999,999.99)" (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts).
    Each end is inside, one minor unit past it is parked before the send; what is charged is sent as written."""
    link(world, "alice")
    for n, (cents, charged) in enumerate(cases):
        obj = world.upload(f"alice/L-{n}.json", raw_order(f"L-{n}", str(cents), currency))
        if charged:
            assert charge(world, obj, currencies=(currency,), min_amount_cents=low,
                          max_amount_cents=high)["status"] == "charged"
        else:
            with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
                charge(world, obj, currencies=(currency,), min_amount_cents=low, max_amount_cents=high)
    sent = sorted((i["amount"], i["currency"]) for i in succeeded(world))
    assert sent == sorted((c, currency) for c, ok in cases if ok)


# == the order id (P1: one key per order a person reads as one) =======================================================
@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2002", "\u202f"])
def test_an_order_id_with_a_unicode_space_at_an_end_is_refused_naming_the_id_to_write(world, space):  # noqa: F811
    """P1. A no-break, ideographic or en space looks like nothing at the end of "1001"; as a key it is another
    order (https://www.rfc-editor.org/rfc/rfc8259#section-8.3). Refused before the send, with the id to write,
    whether at the start or the end; "1001" itself is charged once."""
    link(world, "alice")
    assert charge(world, world.upload("alice/1001.json", order("1001", amount_cents=1250)))["status"] == "charged"
    for n, odd in enumerate((f"1001{space}", f"{space}1001")):
        with pytest.raises(keyed.NeedsAttention, match="'1001'"):
            charge(world, world.upload(f"alice/odd-{n}.json", order(odd, amount_cents=1250)))
    assert len(succeeded(world)) == 1


def test_order_ids_with_hash_slash_and_percent_are_each_their_own_order_charged_once(world):  # noqa: F811
    """P1. `#`, `/` and `%` are characters of an id, not separators: "A#1", "A%231" (what "A#1" reads as
    percent-encoded), "A/1" and "A%2F1" are four orders, each charged once under its own key, and each
    PaymentIntent's metadata names its id as written (https://docs.stripe.com/api/metadata)."""
    link(world, "alice")
    ids = ["A#1", "A%231", "A/1", "A%2F1"]
    for n, order_id in enumerate(ids):
        assert charge(world, world.upload(f"alice/p-{n}.json", order(order_id, amount_cents=1250)))["status"] == "charged"
    for n, order_id in enumerate(ids):
        assert charge(world, world.upload(f"alice/q-{n}.json", order(order_id, amount_cents=1250)))["status"] == "duplicate"
    assert sorted(i["metadata"]["order_id"] for i in succeeded(world)) == sorted(ids)
    assert len({r.key for r in records(world)}) == 4


def test_an_order_id_of_multibyte_characters_at_the_length_limit_is_charged_once(world):  # noqa: F811
    """P1/P2. Stripe's metadata values may be "up to 500 characters long" (https://docs.stripe.com/api/metadata);
    the handler allows 200. An id of 200 four-byte characters (800 bytes of UTF-8) is one order, charged once,
    and its copy answered from the record; one character more is parked before the send."""
    link(world, "alice")
    long_id = "\U0001F4B3" * 200
    assert charge(world, world.upload("alice/e.json", order(long_id, amount_cents=1250)))["status"] == "charged"
    assert charge(world, world.upload("alice/e2.json", order(long_id, amount_cents=1250)))["status"] == "duplicate"
    with pytest.raises(keyed.NeedsAttention, match="nothing was charged"):
        charge(world, world.upload("alice/f.json", order(long_id + "\U0001F4B3", amount_cents=1250)))
    (intent,) = succeeded(world)
    assert intent["metadata"]["order_id"] == long_id


# == the account folder (P2: who pays, from the link) =================================================================
def test_an_account_folder_in_nfd_is_not_the_nfc_accounts_and_is_never_charged_to_it(world):  # noqa: F811
    """P2. macOS writes file names decomposed (NFD), so a sync tool may upload `café/…` as `cafe\\u0301/…`. S3
    keys are byte sequences (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html): that is
    another prefix, with no link of its own. It is parked (no linked customer), never charged to the NFC
    account's customer."""
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    link(world, nfc, "cus_cafe")
    with pytest.raises(keyed.NeedsAttention, match="no linked customer"):
        charge(world, world.upload(f"{nfd}/o.json", order("C-1", amount_cents=1250)))
    assert _intents(world) == {}


def test_an_account_folder_with_a_space_at_an_end_is_another_account_and_parked(world):  # noqa: F811
    """P2. `alice /o.json` is under the prefix `alice /`, not `alice/`; with no link of its own it is parked
    (no linked customer), alice's customer never charged."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="no linked customer"):
        charge(world, world.upload("alice /o.json", order("S-1", amount_cents=1250)))
    assert _intents(world) == {}


# == a file uploaded again with another amount (P1/P2: never a second charge, never a silent new amount) =============
def test_a_file_reuploaded_with_a_changed_amount_after_it_was_charged_is_parked_and_counted(world):  # noqa: F811
    """P1/P2/P4. The same order at another amount, after its charge: "refund or charge the difference by hand";
    parked, counted (`needs_attention` once), the booked line unchanged, one PaymentIntent."""
    link(world, "alice")
    assert charge(world, world.upload("alice/R.json", order("R-1", amount_cents=1250)))["status"] == "charged"
    with pytest.raises(keyed.NeedsAttention, match="1250") as parked:
        charge(world, world.upload("alice/R.json", order("R-1", amount_cents=1350)))
    assert parked.value.again is False
    (line,) = records(world)
    assert (line.status, line.cents) == (keyed.Status.DONE, 1250) and len(succeeded(world)) == 1


def test_a_file_reuploaded_with_a_changed_amount_after_a_decline_is_answered_declined_never_charged(world):  # noqa
    """P1/P2. A declined order's key holds Stripe's decline; the same order at another amount is answered from the
    record (a new order id is a new order), never charged under the key with other parameters (Stripe's
    idempotency_error) nor under a new key."""
    link(world, "alice")
    world.stripe.inject("insufficient_funds")
    assert charge(world, world.upload("alice/D.json", order("D-1", amount_cents=1250)))["status"] == "declined"
    assert charge(world, world.upload("alice/D.json", order("D-1", amount_cents=990)))["status"] == "declined"
    assert succeeded(world) == [] and len(_intents(world)) == 1


def test_a_file_reuploaded_with_a_changed_amount_after_a_park_before_the_send_is_charged_the_new_amount_once(world):  # noqa
    """P1/P2. Parked before anything was sent (an amount over the limit: `unsent`), the order's fixed upload takes
    the record over and is charged the new amount once; a third upload at the first amount is then a duplicate
    on other terms: parked, not charged."""
    link(world, "alice")
    with pytest.raises(keyed.NeedsAttention, match="MAX_AMOUNT_CENTS"):
        charge(world, world.upload("alice/P.json", order("P-1", amount_cents=200_000)))
    assert charge(world, world.upload("alice/P.json", order("P-1", amount_cents=1250)))["status"] == "charged"
    with pytest.raises(keyed.NeedsAttention):
        charge(world, world.upload("alice/P.json", order("P-1", amount_cents=200_000)))
    (intent,) = succeeded(world)
    assert intent["amount"] == 1250 and records(world)[0].cents == 1250


# == Stripe's answers (P2, "answers by meaning") =====================================================================
@pytest.mark.parametrize("fault", ["rate_limit", "lock_timeout", "unavailable", "drop_before", "drop_after"])
def test_a_transient_answer_on_the_saved_method_read_is_retried_and_charged_once(world, fault):  # noqa: F811
    """P2. The read of the customer's default method sends no idempotency key; a 429 ("Too many requests",
    https://docs.stripe.com/rate-limits), a lock_timeout, a 503 or a lost connection on it moved no money: the
    invocation fails for a retry (never parked), the record says nothing was sent, and the retry charges once."""
    link(world, "alice")
    obj = world.upload("alice/M-1.json", order("M-1", amount_cents=1250))
    world.stripe.inject(fault, method="GET", path="/v1/customers")
    with pytest.raises(Exception) as first:
        charge(world, obj)
    assert not isinstance(first.value, keyed.NeedsAttention)
    assert _intents(world) == {} and records(world)[0].status is keyed.Status.IN_PROGRESS
    assert charge(world, obj)["status"] == "charged"
    assert len(succeeded(world)) == 1 and records(world)[0].status is keyed.Status.DONE


def test_a_lost_answer_to_a_charge_that_succeeded_is_booked_once_by_the_retry_never_charged_twice(world):  # noqa
    """P1/P3. The connection drops after Stripe executed the charge (an `api_connection_error` to the SDK): Stripe
    saved the answer for the key ("subsequent requests with the same key return the same result",
    https://docs.stripe.com/idempotency); the invocation fails, the record is released saying a charge may have
    been sent (not `unsent`), and the retry's replay is booked: one PaymentIntent, one line."""
    link(world, "alice")
    obj = world.upload("alice/X-1.json", order("X-1", amount_cents=1250))
    world.stripe.inject("drop_after")
    with pytest.raises(Exception) as lost:
        charge(world, obj)
    assert not isinstance(lost.value, keyed.NeedsAttention)
    (held,) = records(world)
    assert held.status is keyed.Status.IN_PROGRESS and held.unsent is False
    assert charge(world, obj)["status"] == "charged"
    (intent,) = succeeded(world)
    assert records(world)[0].status is keyed.Status.DONE and records(world)[0].result["charge_id"] == intent["id"]


def test_a_500_from_stripe_on_the_charge_parks_the_order_as_maybe_charged_and_counts_it(world):  # noqa: F811
    """P1/P4. A 500 is saved for the key ("Retries with the same key return the saved response, including 500
    errors", https://docs.stripe.com/api/idempotent_requests): no retry can clear it for 24 h and a new key could
    charge twice. Parked (counted once), never `unsent`, naming `idem settle`; its event again counts
    `still_needs_attention`, with no second request."""
    link(world, "alice")
    obj = world.upload("alice/F-1.json", order("F-1", amount_cents=1250))
    world.stripe.inject("api_error")
    with pytest.raises(keyed.NeedsAttention, match="idem settle") as parked:
        charge(world, obj)
    assert parked.value.again is False and records(world)[0].unsent is not True
    sent = len(world.stripe.requests)
    with pytest.raises(keyed.NeedsAttention) as again:
        charge(world, obj)
    assert again.value.again is True and len(world.stripe.requests) == sent


def test_a_processing_charge_is_recorded_pending_in_the_index_the_stale_sweep_reads(world):  # noqa: F811
    """P3/P4. A charge Stripe answers `processing` (a bank debit: "can still fail",
    https://docs.stripe.com/payments/paymentintents/lifecycle) is recorded `pending`, not booked: no account (no
    ledger line in the by_account index), and `booked_day` = `pending` with the time it was recorded, so the
    reconciliation's sweep of records left pending finds it by one Query of the by_day index (docs/money_contract.md, 4)."""
    link(world, "alice")
    world.stripe.inject("processing")
    assert charge(world, world.upload("alice/B-1.json", order("B-1", amount_cents=1250)))["status"] == "pending"
    (rec,) = records(world)
    item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": rec.key}})["Item"]
    assert item["status"]["S"] == "pending" and "account" not in item
    assert item["booked_day"]["S"] == "pending" and float(item["booked_at"]["N"]) == world.clock.now()


# == the settings (P2: limits and currencies are settings, read as written or refused at cold start) ================
@pytest.mark.parametrize("name, raw", [("MAX_AMOUNT_CENTS", "\u00b2"), ("MAX_AMOUNT_CENTS", "\uff11\uff10\uff10"),
                                       ("MIN_AMOUNT_CENTS", "\u0665\u0660"), ("MAX_AMOUNT_CENTS", "1e5"),
                                       ("MAX_AMOUNT_CENTS", " 100000"), ("CURRENCIES", "\uff55\uff53\uff44")])
def test_a_limit_or_currency_setting_not_in_ascii_refuses_to_start_naming_it(name, raw):
    """P2. The limits are "both settings", and a setting read otherwise than written moves other money: a
    superscript two, full-width or Arabic-Indic digits (which Python's `str.isdigit` accepts, and `int` reads or
    crashes on), an exponent, a space; a full-width currency code (Stripe: "You must use all lowercase letters
    when passing the three-letter ISO code", https://docs.stripe.com/currencies). Each refuses to start with a
    ConfigError naming the setting, never a crash of another kind nor a limit read as another number. (Was: `²`
    crashed with ValueError, `１００` and `٥٠` were read as 100 and 50, and `ｕｓｄ` was a currency: fixed.)"""
    from idem.core.handlers.keyed_settings import settings_from_env

    with pytest.raises(keyed.ConfigError, match=name):
        settings_from_env({"LEDGER_TABLE": "ledger", name: raw})


@pytest.mark.parametrize("key, account", [("/alice/o.json", ""), ("alice//o.json", "alice"),
                                          ("alice/2026/12/o.json", "alice")])
def test_the_account_is_the_keys_first_segment_as_s3_writes_it(world, key, account):  # noqa: F811 (the fixture)
    """P2. S3 has no folders, only key prefixes (https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-folders.html):
    `/alice/o.json` begins with an empty segment (no account: parked, alice not charged); `alice//o.json` and
    `alice/2026/12/o.json` are under `alice/`, charged to alice's link."""
    alice = link(world, "alice")
    obj = world.upload(key, order("K-1", amount_cents=1250))
    if not account:
        with pytest.raises(keyed.NeedsAttention, match="no account folder"):
            charge(world, obj)
        assert _intents(world) == {}
    else:
        assert charge(world, obj)["status"] == "charged"
        (intent,) = succeeded(world)
        assert intent["customer"] == alice and intent["metadata"]["idem_account"] == account


def test_an_off_session_charge_needing_3ds_that_the_customer_completes_later_is_booked_by_its_event(world):  # noqa
    """P1/P3. Off-session, a charge needing authentication is left `requires_action`; the handler records the order
    `declined`, naming the PaymentIntent. Stripe's answer is to bring the customer back on-session to authenticate
    that same PaymentIntent ("notify your customer to return to your application to complete the payment",
    https://docs.stripe.com/payments/save-and-reuse); once they do, it succeeds and Stripe sends
    `payment_intent.succeeded`. "A success is final": the webhook books it on the order's record (the very charge
    the record names), once; the reconciliation would never see it otherwise (its search is by `created`, days
    before). (Was answered 409 for three days, the record naming the charge only in its result: fixed.)"""
    from idem.core import webhook

    link(world, "alice")
    world.stripe.inject("requires_action")
    assert charge(world, world.upload("alice/T-1.json", order("T-1", amount_cents=1250)))["status"] == "declined"
    (intent,) = _intents(world).values()
    world.clock.advance(2 * 24 * HOUR)
    intent.update(status="succeeded", amount_received=1250)
    books = webhook.Books(world.dynamodb, world.ledger_table, "", now=world.clock.now)
    event = {"id": "evt_3ds", "type": "payment_intent.succeeded", "data": {"object": dict(intent)}}
    assert books.handle(event) == "booked"
    assert books.handle(event) == "duplicate: handled already"
    (line,) = [r for r in records(world) if r.key.startswith("charge#")]
    assert (line.status, line.cents, line.currency) == (keyed.Status.DONE, 1250, "usd")
    item = world.dynamodb.get_item(TableName=world.ledger_table, Key={"pk": {"S": line.key}})["Item"]
    assert item["charge_id"]["S"] == intent["id"] and item["booked_day"]["S"] != "pending"  # a line the job reads
    assert charge(world, world.upload("alice/T-1.json", order("T-1", amount_cents=1250)))["status"] == "duplicate"


def test_a_declined_charge_the_customer_pays_later_on_session_is_booked_by_its_event(world):  # noqa: F811
    """P1/P3. A hard decline (402 `card_error`) leaves the PaymentIntent `requires_payment_method`: "If the payment
    attempt fails (for example due to a decline), the PaymentIntent's status returns to requires_payment_method"
    and it may be confirmed again (https://docs.stripe.com/payments/paymentintents/lifecycle); Stripe's error body
    names it ("payment_intent: The PaymentIntent object for errors returned on a request involving a
    PaymentIntent", https://docs.stripe.com/api/errors). The handler's decline stays final for the handler (no
    second attempt at the card), but its record names that PaymentIntent, so when the customer pays it on-session
    with another card the webhook books the success on the order's record, once. (Was: the record named no charge,
    the success was answered 409 for three days and the money was on no line and in no later window's search,
    which is by `created`: fixed.)"""
    from idem.core import webhook

    link(world, "alice")
    world.stripe.inject("insufficient_funds")
    assert charge(world, world.upload("alice/Y-1.json", order("Y-1", amount_cents=1250)))["status"] == "declined"
    (intent,) = _intents(world).values()
    assert records(world)[0].result["charge_id"] == intent["id"]
    world.clock.advance(HOUR)
    intent.update(status="succeeded", amount_received=1250)
    books = webhook.Books(world.dynamodb, world.ledger_table, "", now=world.clock.now)
    assert books.handle({"id": "evt_paid", "type": "payment_intent.succeeded", "data": {"object": dict(intent)}}) == "booked"
    (line,) = [r for r in records(world) if r.key.startswith("charge#")]
    assert (line.status, line.cents) == (keyed.Status.DONE, 1250)
    assert charge(world, world.upload("alice/Y-1.json", order("Y-1", amount_cents=1250)))["status"] == "duplicate"
