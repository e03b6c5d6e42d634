"""The loopback Stripe held to Stripe's published rules (issue 27), through Stripe's own SDK:
customers and saved payment methods, live and test objects apart, restricted keys, error types
and codes, what is and is not saved for a key, PaymentIntent statuses, search (with its lag) and
lists, refunds, the rate limiter. Each rule is cited in idem/sim/stripe/."""
from __future__ import annotations

import pytest
import stripe

from idem.sim.stripe.access import RateLimiter, key_mode
from idem.sim.stripe.errors import FAULTS
from idem.sim.stripe.server import NoRealSleep, loopback_stripe, seed_customer
from idem.sim.world import LocalWorld

DAY = 24 * 3600


@pytest.fixture
def world():
    with LocalWorld(provider_in_memory=True) as w:
        yield w


@pytest.fixture
def server(world):
    with loopback_stripe(world) as s:
        yield s


def sdk(server, key="sk_test_loopback", retries=0):
    return stripe.StripeClient(key, base_addresses={"api": server.url}, max_network_retries=retries,
                               http_client=NoRealSleep(timeout=(2.0, 8.0)))


def off_session(customer, method, amount=1250, **extra):
    return {"amount": amount, "currency": "usd", "customer": customer, "payment_method": method,
            "off_session": True, "confirm": True, **extra}


def create(client, params, key=None):
    return client.v1.payment_intents.create(params=params, options={"idempotency_key": key} if key else {})


# -- customers and saved payment methods ------------------------------------------------------------
def test_a_seeded_customer_has_its_saved_card_as_default(server):
    customer, method = seed_customer(server)
    client = sdk(server)
    found = client.v1.customers.retrieve(customer)
    assert found.id == customer and found.invoice_settings.default_payment_method == method
    assert method != "pm_card_visa"  # a test method used with a customer makes a PaymentMethod of its own
    assert client.v1.payment_methods.retrieve(method).customer == customer
    assert [m.id for m in client.v1.customers.payment_methods.list(customer).data] == [method]
    listed = client.v1.payment_methods.list(params={"customer": customer, "type": "card"})
    assert [m.id for m in listed.data] == [method]


def test_a_seeded_customer_can_have_the_id_an_order_names(server):
    customer, method = seed_customer(server, customer_id="cus_alice")
    assert customer == "cus_alice" and sdk(server).v1.customers.retrieve("cus_alice").id == customer
    with pytest.raises(ValueError, match="exists already"):
        seed_customer(server, customer_id="cus_alice")
    with pytest.raises(ValueError, match="letters, digits"):
        seed_customer(server, customer_id="alice")


def test_customers_and_methods_made_through_the_sdk(server):
    client = sdk(server)
    customer = client.v1.customers.create(params={"email": "a@example.com", "metadata": {"account": "alice"}})
    attached = client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    updated = client.v1.customers.update(
        customer.id, params={"invoice_settings": {"default_payment_method": attached.id}})
    assert updated.invoice_settings.default_payment_method == attached.id
    assert updated.metadata["account"] == "alice" and updated.livemode is False


def test_a_customer_is_charged_off_session_with_its_saved_method(server, world):
    customer, method = seed_customer(server)
    intent = create(sdk(server), off_session(customer, method, metadata={"order_id": "A-1001"}), key="k1")
    assert (intent.status, intent.customer, intent.payment_method, intent.amount_received) == \
           ("succeeded", customer, method, 1250)
    (charge,) = world.provider().charges()
    assert intent.id == "pi_" + charge.id.removeprefix("pi_").removeprefix("ch_")
    assert (charge.customer, charge.reference, charge.amount) == (customer, "A-1001", 1250)


def test_a_customer_that_does_not_exist_is_resource_missing_on_the_customer_param(server, world):
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server), off_session("cus_nobody", "pm_card_visa"), key="k")
    assert (raised.value.http_status, raised.value.code, raised.value.param) == (400, "resource_missing", "customer")
    assert "No such customer: 'cus_nobody'" in raised.value.user_message
    assert world.provider().charges() == []


def test_an_amount_under_the_currencys_minimum_is_refused_as_stripe_refuses_it_and_saves_nothing(server, world):
    customer, method = seed_customer(server)
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server), off_session(customer, method, amount=49), key="k")
    assert (raised.value.http_status, raised.value.code, raised.value.param) == (400, "amount_too_small", "amount")
    assert raised.value.error.type == "invalid_request_error"
    assert world.provider().charges() == []
    intent = create(sdk(server), off_session(customer, method, amount=50), key="k")  # nothing saved for "k"
    assert (intent.status, intent.amount_received) == ("succeeded", 50)


def test_another_customers_method_is_refused(server, world):
    alice, alices_card = seed_customer(server)
    bob, _ = seed_customer(server)
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server), off_session(bob, alices_card), key="k")
    assert (raised.value.http_status, raised.value.param) == (400, "payment_method")
    assert world.provider().charges() == []


def test_a_live_method_not_saved_to_the_customer_cannot_be_charged_off_session(server):
    customer = server.account.create_customer("live")
    loose = server.account.create_payment_method("live")  # collected, never attached
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server, "sk_live_loopback"), off_session(customer["id"], loose["id"]), key="k")
    assert raised.value.param == "payment_method" and "must be attached to the customer" in raised.value.user_message


def test_a_method_never_saved_pays_once(server):
    loose = server.account.create_payment_method("live")
    live = sdk(server, "sk_live_loopback")
    assert create(live, {"amount": 500, "currency": "usd", "payment_method": loose["id"], "confirm": True}).status \
        == "succeeded"
    with pytest.raises(stripe.InvalidRequestError, match="may not be used again"):
        create(live, {"amount": 500, "currency": "usd", "payment_method": loose["id"], "confirm": True})


def test_a_default_must_be_attached_to_the_customer(server):
    customer, _ = seed_customer(server)
    stranger = server.account.create_payment_method("test")
    with pytest.raises(stripe.InvalidRequestError) as raised:
        sdk(server).v1.customers.update(customer, params={"invoice_settings": {"default_payment_method": stranger["id"]}})
    assert raised.value.param == "invoice_settings[default_payment_method]"


def test_an_unknown_parameter_is_refused_and_saves_nothing(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(client, off_session(customer, method, idem_stack="S"), key="k")  # metadata belongs in metadata
    assert (raised.value.code, raised.value.param) == ("parameter_unknown", "idem_stack")
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(client, off_session(customer, method, automatic_payment_methods={"enabled": True, "colour": "x"}))
    assert raised.value.param == "automatic_payment_methods[colour]"
    assert create(client, off_session(customer, method), key="k").status == "succeeded"
    assert len(world.provider().charges()) == 1


def test_off_session_needs_confirm(server):
    customer, method = seed_customer(server)
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server), {**off_session(customer, method), "confirm": False})
    assert raised.value.param == "off_session"


# -- live and test objects apart; restricted keys ----------------------------------------------------
def test_keys_name_their_mode():
    assert [key_mode(k) for k in ("sk_test_a", "rk_test_a", "sk_live_a", "rk_live_a", "pk_test_a", "sk_test_", "")] \
        == ["test", "test", "live", "live", None, None, None]


def test_test_objects_do_not_exist_for_a_live_key_and_back(server):
    customer, method = seed_customer(server)
    live_customer, live_method = seed_customer(server, mode="live", payment_method="card")
    live, test = sdk(server, "sk_live_loopback"), sdk(server)
    with pytest.raises(stripe.InvalidRequestError) as raised:
        live.v1.customers.retrieve(customer)
    assert raised.value.http_status == 404 and raised.value.code == "resource_missing"
    assert "exists in test mode, but a live mode key" in raised.value.user_message
    with pytest.raises(stripe.InvalidRequestError):
        test.v1.customers.retrieve(live_customer)
    intent = create(live, off_session(live_customer, live_method), key="k")
    assert intent.livemode is True and intent.status == "succeeded"
    with pytest.raises(stripe.InvalidRequestError) as raised:
        test.v1.payment_intents.retrieve(intent.id)
    assert raised.value.code == "resource_missing"


def test_test_payment_methods_are_missing_in_live_mode(server, world):
    live_customer, _ = seed_customer(server, mode="live", payment_method="card")
    with pytest.raises(stripe.InvalidRequestError) as raised:
        create(sdk(server, "sk_live_loopback"), off_session(live_customer, "pm_card_visa"), key="k")
    assert (raised.value.code, raised.value.param) == ("resource_missing", "payment_method")
    assert world.provider().charges() == []


def test_the_same_key_in_both_modes_is_two_requests(server, world):
    test_customer, test_method = seed_customer(server)
    live_customer, live_method = seed_customer(server, mode="live", payment_method="card")
    create(sdk(server), off_session(test_customer, test_method), key="same")
    create(sdk(server, "sk_live_loopback"), off_session(live_customer, live_method), key="same")
    assert len(world.provider().charges()) == 2


def test_a_bad_key_is_401(server):
    with pytest.raises(stripe.AuthenticationError) as raised:
        sdk(server, "not_a_key").v1.customers.retrieve("cus_x")
    assert raised.value.http_status == 401


def test_a_restricted_key_has_only_its_permissions(server):
    customer, method = seed_customer(server)
    restricted = sdk(server, "rk_test_function")
    intent = create(restricted, off_session(customer, method), key="k")  # PaymentIntents write: the default
    found = restricted.v1.payment_intents.search(params={"query": f"customer:'{customer}'"})
    assert [i.id for i in found.data] == [intent.id]  # PaymentIntents read
    with pytest.raises(stripe.PermissionError) as raised:
        restricted.v1.customers.retrieve(customer)
    assert raised.value.http_status == 403
    server.restrict("rk_test_function", {"payment_intents:write", "customers:read"})
    assert restricted.v1.customers.retrieve(customer).id == customer
    with pytest.raises(stripe.PermissionError):
        restricted.v1.refunds.create(params={"payment_intent": intent.id})


# -- error types and codes, and what is saved for a key -----------------------------------------------
@pytest.mark.parametrize("fault, error, status, code, kind", [
    ("rate_limit", stripe.RateLimitError, 429, "rate_limit", "invalid_request_error"),
    ("rate_limit_400", stripe.RateLimitError, 400, "rate_limit", "invalid_request_error"),
    ("lock_timeout", stripe.RateLimitError, 429, "lock_timeout", "invalid_request_error"),
    ("api_error", stripe.APIError, 500, None, "api_error"),
    ("unavailable", stripe.APIError, 503, None, "api_error"),
    ("in_flight", stripe.APIError, 409, None, "idempotency_error"),
    ("invalid_request", stripe.InvalidRequestError, 400, "parameter_invalid_integer", "invalid_request_error"),
    ("card_declined", stripe.CardError, 402, "card_declined", "card_error"),
    ("insufficient_funds", stripe.CardError, 402, "card_declined", "card_error"),
    ("authentication_required", stripe.CardError, 402, "authentication_required", "card_error"),
])
def test_each_fault_is_stripes_error(server, fault, error, status, code, kind):
    customer, method = seed_customer(server)
    server.inject(fault)
    with pytest.raises(error) as raised:
        create(sdk(server), off_session(customer, method), key="k")
    body = raised.value.json_body["error"]
    assert raised.value.http_status == status and body["type"] == kind and body.get("code") == code
    assert raised.value.error.code == code  # what a handler reads: the error's code, not its status


def test_a_decline_carries_its_decline_code_and_the_payment_intent(server, world):
    customer, method = seed_customer(server)
    server.inject("insufficient_funds")
    with pytest.raises(stripe.CardError) as raised:
        create(sdk(server), off_session(customer, method), key="k")
    assert raised.value.code == "card_declined" and raised.value.error.decline_code == "insufficient_funds"
    intent = raised.value.error.payment_intent
    assert intent.status == "requires_payment_method" and intent.last_payment_error.code == "card_declined"
    assert world.provider().charges() == []


@pytest.mark.parametrize("method, code, decline", [
    ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_authenticationRequired", "authentication_required", "authentication_required")])
def test_test_cards_decline_as_documented(server, method, code, decline):
    customer, saved = seed_customer(server, payment_method=method)
    with pytest.raises(stripe.CardError) as raised:
        create(sdk(server), off_session(customer, saved), key="k")
    assert (raised.value.code, raised.value.error.decline_code) == (code, decline)


@pytest.mark.parametrize("fault", ["api_error", "card_declined", "authentication_required"])
def test_an_answer_after_execution_began_is_saved_and_replayed(server, world, fault):
    customer, method = seed_customer(server)
    server.inject(fault)
    client = sdk(server)
    with pytest.raises(stripe.StripeError) as first:
        create(client, off_session(customer, method), key="k")
    with pytest.raises(type(first.value)) as again:  # the fault is gone; the answer is saved
        create(client, off_session(customer, method), key="k")
    assert again.value.json_body == first.value.json_body
    assert again.value.headers.get("Idempotent-Replayed") == "true"
    assert len(world.provider().charges()) == (1 if fault == "api_error" else 0)


@pytest.mark.parametrize("fault", ["rate_limit", "rate_limit_400", "lock_timeout", "unavailable", "in_flight",
                                   "invalid_request", "drop_before"])
def test_an_answer_before_execution_saves_nothing(server, world, fault):
    customer, method = seed_customer(server)
    server.inject(fault)
    client = sdk(server)
    with pytest.raises(stripe.StripeError):
        create(client, off_session(customer, method), key="k")
    assert world.provider().charges() == []
    intent = create(client, off_session(customer, method), key="k")  # the retry executes
    assert intent.status == "succeeded" and len(world.provider().charges()) == 1


def test_a_request_that_fails_validation_saves_nothing(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    with pytest.raises(stripe.InvalidRequestError):
        create(client, off_session(customer, method, amount=0), key="k")
    assert create(client, off_session(customer, method, amount=700), key="k").amount == 700


def test_the_same_key_with_other_parameters_is_an_idempotency_error(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    create(client, off_session(customer, method, metadata={"version_id": "v1"}), key="k")
    # Metadata are parameters too: the same order's key with another version's metadata is refused.
    with pytest.raises(stripe.IdempotencyError) as raised:
        create(client, off_session(customer, method, metadata={"version_id": "v2"}), key="k")
    assert raised.value.http_status == 400 and raised.value.json_body["error"]["type"] == "idempotency_error"
    with pytest.raises(stripe.IdempotencyError):
        create(client, off_session(customer, method, amount=999, metadata={"version_id": "v1"}), key="k")
    assert len(world.provider().charges()) == 1


def test_a_lost_answer_after_execution_replays_to_the_sdks_retry(server, world):
    customer, method = seed_customer(server)
    server.inject("drop_after")
    with pytest.raises(stripe.APIConnectionError):
        create(sdk(server), off_session(customer, method), key="k")
    assert len(world.provider().charges()) == 1  # executed; the answer was lost on the way
    server.inject("drop_after")
    intent = create(sdk(server, retries=1), off_session(customer, method), key="k2")  # the SDK's own retry
    assert intent.status == "succeeded" and len(world.provider().charges()) == 2


def test_a_lock_timeout_asks_the_sdk_to_retry(server, world):
    customer, method = seed_customer(server)
    server.inject("lock_timeout")
    intent = create(sdk(server, retries=1), off_session(customer, method), key="k")  # retried by the SDK
    assert intent.status == "succeeded" and server.pending() == []
    server.inject("rate_limit")
    with pytest.raises(stripe.RateLimitError):  # a plain 429 is not retried by stripe-python
        create(sdk(server, retries=1), off_session(customer, method), key="k2")


def test_a_fault_can_be_aimed_at_one_key(server):
    customer, method = seed_customer(server)
    server.inject("card_declined", key="other")
    assert create(sdk(server), off_session(customer, method), key="mine").status == "succeeded"
    assert server.pending() == ["card_declined"]
    with pytest.raises(stripe.CardError):
        create(sdk(server), off_session(customer, method), key="other")


def test_a_key_in_flight_is_409_and_saves_nothing(server, world):
    """Two requests with one key at once: the second meets the first in flight (409); once the
    first is done, the same request is its replay."""
    import threading

    customer, method = seed_customer(server)
    inside, release = threading.Event(), threading.Event()
    stand_in = server.account.provider
    charge = stand_in.charge

    def slow_charge(**kwargs):
        inside.set()
        assert release.wait(10)
        return charge(**kwargs)

    stand_in.charge = slow_charge
    first: list = []
    worker = threading.Thread(target=lambda: first.append(create(sdk(server), off_session(customer, method), "k")))
    worker.start()
    try:
        assert inside.wait(10)
        with pytest.raises(stripe.APIError) as raised:
            create(sdk(server), off_session(customer, method), "k")
        assert raised.value.http_status == 409
    finally:
        release.set()
        worker.join(10)
        del stand_in.charge
    again = create(sdk(server), off_session(customer, method), "k")
    assert again.id == first[0].id and len(world.provider().charges()) == 1


def test_a_key_is_pruned_after_24_hours(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    first = create(client, off_session(customer, method), key="k")
    world.clock.advance(DAY - 1)
    assert create(client, off_session(customer, method), key="k").id == first.id
    world.clock.advance(2)
    assert create(client, off_session(customer, method), key="k").id != first.id
    assert len(world.provider().charges()) == 2


def test_every_fault_is_named_and_unknown_ones_are_refused(server):
    assert {"rate_limit", "lock_timeout", "api_error", "card_declined", "processing", "requires_action"} <= set(FAULTS)
    with pytest.raises(ValueError, match="no fault"):
        server.inject("gremlins")
    with pytest.raises(ValueError, match="no outcome"):
        server.outcome = "gremlins"


def test_an_outcome_holds_for_every_request_until_reset(server, world):
    customer, method = seed_customer(server)
    server.outcome = "rate_limit_400"  # the runtime's outcomes, or any fault by name
    for key in ("a", "b"):
        with pytest.raises(stripe.RateLimitError):
            create(sdk(server), off_session(customer, method), key=key)
    server.outcome = "ok"
    assert create(sdk(server), off_session(customer, method), key="a").status == "succeeded"


# -- statuses -----------------------------------------------------------------------------------------------
def test_a_bank_debit_is_processing_then_settles(server, world):
    customer, method = seed_customer(server, payment_method="us_bank_account")
    client = sdk(server)
    intent = create(client, off_session(customer, method), key="k")
    assert intent.status == "processing" and intent.amount_received == 0
    assert len(world.provider().charges()) == 1  # money may move: the stand-in holds it
    server.settle(intent.id, succeeded=True)
    assert client.v1.payment_intents.retrieve(intent.id).status == "succeeded"
    other = create(client, off_session(customer, method), key="k2")
    server.settle(other.id, succeeded=False)
    failed = client.v1.payment_intents.retrieve(other.id)
    assert failed.status == "requires_payment_method" and failed.last_payment_error is not None
    assert server.account.failed == {other.id}
    assert [c.id for c in world.provider().charges()] == [intent.id]  # the failed debit moved no money
    with pytest.raises(ValueError, match="not processing"):
        server.settle(intent.id, succeeded=True)


def test_processing_and_requires_action_can_be_injected(server, world):
    customer, method = seed_customer(server)
    server.inject("processing", "requires_action")
    client = sdk(server)
    assert create(client, off_session(customer, method), key="a").status == "processing"
    acting = create(client, off_session(customer, method), key="b")
    assert acting.status == "requires_action" and acting.next_action is not None
    assert len(world.provider().charges()) == 1  # requires_action moved no money


def test_a_card_needing_authentication_on_session_waits_in_requires_action(server):
    customer, method = seed_customer(server, payment_method="pm_card_authenticationRequired")
    intent = create(sdk(server), {"amount": 500, "currency": "usd", "customer": customer, "payment_method": method,
                                  "confirm": True})
    assert intent.status == "requires_action"


# -- search and lists ------------------------------------------------------------------------------------------
def test_search_by_metadata_with_and(server):
    customer, method = seed_customer(server)
    client = sdk(server)
    mine = create(client, off_session(customer, method, metadata={"idem_stack": "S", "idempotency_key": "K1"}), "K1")
    create(client, off_session(customer, method, metadata={"idem_stack": "S", "idempotency_key": "K2"}), "K2")
    create(client, off_session(customer, method, metadata={"idem_stack": "T", "idempotency_key": "K1"}), "K3")
    found = client.v1.payment_intents.search(
        params={"query": "metadata['idem_stack']:'S' AND metadata['idempotency_key']:'K1'"})
    assert [i.id for i in found.data] == [mine.id]
    stack = client.v1.payment_intents.search(params={"query": "metadata['idem_stack']:'S'", "limit": 1})
    assert len(stack.data) == 1 and stack.has_more and stack.next_page
    assert len(list(stack.auto_paging_iter())) == 2
    with pytest.raises(stripe.InvalidRequestError):
        client.v1.payment_intents.search(params={"query": "metadata['a']:'1' AND x:'2' OR y:'3'"})


def test_search_lags_as_configured(server, world):
    customer, method = seed_customer(server)
    server.search_lag_seconds = 60
    client = sdk(server)
    intent = create(client, off_session(customer, method, metadata={"idempotency_key": "K"}), "K")
    query = {"query": "metadata['idempotency_key']:'K'"}
    assert client.v1.payment_intents.search(params=query).data == []  # not yet searchable
    assert client.v1.payment_intents.retrieve(intent.id).id == intent.id  # retrieve and list are not delayed
    world.clock.advance(60)
    assert [i.id for i in client.v1.payment_intents.search(params=query).data] == [intent.id]


def test_search_sees_a_change_late_too(server, world):
    customer, method = seed_customer(server, payment_method="us_bank_account")
    server.search_lag_seconds = 3600  # an outage: "up to an hour behind"
    client = sdk(server)
    intent = create(client, off_session(customer, method, metadata={"idempotency_key": "K"}), "K")
    query = {"query": "metadata['idempotency_key']:'K'"}
    world.clock.advance(3600)
    server.settle(intent.id, succeeded=True)
    assert [i.status for i in client.v1.payment_intents.search(params=query).data] == ["processing"]
    assert client.v1.payment_intents.retrieve(intent.id).status == "succeeded"
    assert client.v1.payment_intents.search(params={"query": "status:'succeeded'"}).data == []
    world.clock.advance(3600)
    assert [i.status for i in client.v1.payment_intents.search(params=query).data] == ["succeeded"]


def test_list_by_created(server, world):
    customer, method = seed_customer(server)
    client = sdk(server)
    first = create(client, off_session(customer, method), "a")
    world.clock.advance(100)
    second = create(client, off_session(customer, method), "b")
    since = int(world.clock.now()) - 10
    assert [i.id for i in client.v1.payment_intents.list(params={"created": {"gte": since}}).data] == [second.id]
    assert [i.id for i in client.v1.payment_intents.list().data] == [second.id, first.id]  # newest first
    page = client.v1.payment_intents.list(params={"limit": 1})
    assert page.has_more and [i.id for i in page.auto_paging_iter()] == [second.id, first.id]


# -- refunds -------------------------------------------------------------------------------------------------------
def test_a_refund_with_a_key_is_made_once(server):
    customer, method = seed_customer(server)
    client = sdk(server)
    intent = create(client, off_session(customer, method), "k")
    refund = client.v1.refunds.create(params={"payment_intent": intent.id}, options={"idempotency_key": "r"})
    again = client.v1.refunds.create(params={"payment_intent": intent.id}, options={"idempotency_key": "r"})
    assert again.id == refund.id and refund.amount == 1250 and refund.status == "succeeded"
    assert len(server.account.refunds()) == 1
    with pytest.raises(stripe.InvalidRequestError) as raised:
        client.v1.refunds.create(params={"payment_intent": intent.id}, options={"idempotency_key": "r2"})
    assert raised.value.code == "charge_already_refunded"
    with pytest.raises(stripe.InvalidRequestError) as raised:
        client.v1.refunds.create(params={"payment_intent": "pi_nothing"})
    assert (raised.value.code, raised.value.param) == ("resource_missing", "payment_intent")


def test_a_partial_refund_and_no_more_than_was_taken(server):
    customer, method = seed_customer(server)
    client = sdk(server)
    intent = create(client, off_session(customer, method), "k")
    assert client.v1.refunds.create(params={"payment_intent": intent.id, "amount": 250}).amount == 250
    with pytest.raises(stripe.InvalidRequestError) as raised:
        client.v1.refunds.create(params={"payment_intent": intent.id, "amount": 1001})
    assert raised.value.code == "amount_too_large"


# -- the rate limiter --------------------------------------------------------------------------------------------
def test_the_documented_rate_limits():
    now = [0.0]
    limiter = RateLimiter.documented(clock=lambda: now[0])
    assert sum(limiter.admit("test", "POST /v1/payment_intents") for _ in range(30)) == 25  # sandbox: 25/s
    assert sum(limiter.admit("live", "GET /v1/payment_intents/search") for _ in range(30)) == 20  # search: 20/s
    assert sum(limiter.admit("live", f"GET /v1/e{i}") for i in range(200)) == 80  # live: 100/s in all
    now[0] = 1.0
    assert limiter.admit("test", "POST /v1/payment_intents")  # a new second


def test_the_rate_limiter_is_off_by_default_and_answers_429_when_on(server, world):
    assert server.rate_limiter is None
    customer, method = seed_customer(server)
    now = [0.0]
    server.rate_limiter = RateLimiter({"test": 2, "live": 2}, 2, 2, clock=lambda: now[0])
    client = sdk(server)
    create(client, off_session(customer, method), "a")
    create(client, off_session(customer, method), "b")
    with pytest.raises(stripe.RateLimitError) as raised:
        create(client, off_session(customer, method), "c")
    assert raised.value.http_status == 429
    now[0] = 1.0
    assert create(client, off_session(customer, method), "c").status == "succeeded"  # nothing was saved for c
