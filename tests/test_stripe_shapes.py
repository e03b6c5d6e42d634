"""Every answer the loopback Stripe serves, and every request the handler's adapter and idem send it,
checked against what Stripe publishes of their shape: stripe-python 16's types (generated from
Stripe's OpenAPI description) and the fields of Stripe's own fixtures (stripe/openapi, vendored in
idem/sim/stripe/openapi_fields.json with its commit)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import stripe

from idem.sim.stripe import shapes
from idem.sim.stripe.errors import FAULTS
from idem.sim.stripe.params import _route
from idem.sim.stripe.server import NoRealSleep, loopback_stripe, seed_customer
from idem.sim.world import LocalWorld


def sdk(server, key="sk_test_loopback"):
    return stripe.StripeClient(key, base_addresses={"api": server.url}, max_network_retries=0,
                               http_client=NoRealSleep(timeout=(2.0, 8.0)))


def everything(world, server):
    """Every route and every kind of answer the loopback serves, once or more."""
    client = sdk(server)
    customer = client.v1.customers.create(params={"email": "a@example.com", "metadata": {"account": "alice"}})
    method = client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    client.v1.customers.update(customer.id, params={"invoice_settings": {"default_payment_method": method.id}})
    client.v1.customers.retrieve(customer.id)
    client.v1.payment_methods.retrieve(method.id)
    client.v1.customers.payment_methods.list(customer.id, params={"type": "card"})
    client.v1.payment_methods.list(params={"customer": customer.id, "type": "card", "limit": 3})
    params = {"amount": 1250, "currency": "usd", "customer": customer.id, "payment_method": method.id,
              "off_session": True, "confirm": True, "description": "order A-1001",
              "metadata": {"idem_stack": "S", "order_id": "A-1001", "idempotency_key": "K"}}
    intent = client.v1.payment_intents.create(params=params, options={"idempotency_key": "K"})
    client.v1.payment_intents.create(params=params, options={"idempotency_key": "K"})  # a replay
    client.v1.payment_intents.retrieve(intent.id)
    client.v1.payment_intents.list(params={"created": {"gte": 0, "lt": 2_000_000_000}, "limit": 5})
    client.v1.payment_intents.search(params={"query": "metadata['idem_stack']:'S'", "limit": 10})
    held = client.v1.payment_intents.create(params={**params, "capture_method": "manual"})  # a hold, captured in part
    client.v1.payment_intents.capture(held.id, params={"amount_to_capture": 1000}, options={"idempotency_key": "C"})
    for fault in sorted(name for name, f in FAULTS.items() if f.status):  # every error body, declines included
        server.inject(fault)
        try:
            client.v1.payment_intents.create(params={**params, "metadata": {"fault": fault}},
                                             options={"idempotency_key": f"fault-{fault}"})
        except stripe.StripeError:
            pass
    for bad in ({"amount": 0}, {"customer": "cus_nobody"}, {"payment_method": "pm_nothing"}):
        try:
            client.v1.payment_intents.create(params={**params, **bad})
        except stripe.StripeError:
            pass
    try:
        client.v1.payment_intents.create(params={**params, "amount": 9}, options={"idempotency_key": "K"})
    except stripe.IdempotencyError:
        pass
    processing_customer, bank = seed_customer(server, payment_method="us_bank_account")
    client.v1.payment_intents.create(params={**params, "customer": processing_customer, "payment_method": bank})
    refund = client.v1.refunds.create(params={"payment_intent": intent.id, "amount": 100, "reason": "duplicate"},
                                      options={"idempotency_key": "R"})
    client.v1.refunds.retrieve(refund.id)
    client.v1.refunds.list(params={"payment_intent": intent.id})
    try:
        sdk(server, "sk_live_loopback").v1.customers.retrieve(customer.id)
    except stripe.InvalidRequestError:
        pass


@pytest.fixture(scope="module")
def exchanges():
    with LocalWorld(provider_in_memory=True) as world, loopback_stripe(world) as server:
        server.exchanges = []
        everything(world, server)
        yield server.exchanges


def test_every_answer_is_stripes_shape(exchanges):
    problems = {f"{m} {p} {status}": shapes.check_response(body) for m, p, _, status, body in exchanges}
    assert {k: v for k, v in problems.items() if v} == {}
    kinds = {body.get("object") or ("error" if "error" in body else None) for *_, body in exchanges}
    assert kinds == {"customer", "payment_method", "payment_intent", "list", "search_result", "refund", "error"}
    statuses = {status for *_, status, _ in exchanges}
    assert {200, 400, 402, 404, 409, 429, 500, 503} <= statuses


def test_every_request_is_stripes_shape(exchanges):
    problems = {f"{m} {p}": shapes.check_request(_route(m, p)[0], params) for m, p, params, _, _ in exchanges}
    assert {k: v for k, v in problems.items() if v} == {}
    assert len({_route(m, p)[0] for m, p, *_ in exchanges}) == len(shapes.REQUESTS)  # every route served


def test_the_handlers_requests_are_stripes_shape():
    """What the handler to copy sends and reads through its adapter, driven as the check drives it:
    a charge, then (the answer lost on every attempt, redriven 25 hours later, past the key window)
    the look-up by search. Through the runtime, so it holds whatever the adapter's own signature."""
    from idem.explore.redrive import redrive_local
    from idem.sim.faults import FaultPlan
    from idem.sim.runtime import LocalLambda

    with LocalWorld(provider_in_memory=True) as world, loopback_stripe(world) as server:
        server.exchanges = []
        broken = LocalLambda(world, world.env("keyed"), fault=FaultPlan.at_point("after_charge", "always"))
        broken.send(world.event(world.upload("alice/order.csv")))
        broken.run()
        world.clock.advance(25 * 3600)
        redrive_local(LocalLambda(world, world.env("keyed")))
        exchanges = list(server.exchanges)
    sent = {(m, p) for m, p, *_ in exchanges}
    assert {("POST", "/v1/payment_intents"), ("GET", "/v1/payment_intents/search")} <= sent
    assert [shapes.check_request(_route(m, p)[0], params) for m, p, params, *_ in exchanges] == [[]] * len(exchanges)
    assert [shapes.check_response(body) for *_, body in exchanges] == [[]] * len(exchanges)


# -- the checker itself fails on what is wrong -------------------------------------------------------------------
@pytest.fixture(scope="module")
def an_intent(exchanges):
    return next(body for m, p, _, s, body in exchanges if p == "/v1/payment_intents" and m == "POST" and s == 200)


@pytest.mark.parametrize("change, says", [
    (lambda i: i.pop("amount_received"), "amount_received: missing"),
    (lambda i: i.pop("latest_charge"), "latest_charge: missing"),  # nullable, and still always served
    (lambda i: i.update(amount="1250"), "amount: '1250' is not an integer"),
    (lambda i: i.update(status="charged"), "status: 'charged' fits none of"),
    (lambda i: i.update(livemode="false"), "livemode: 'false' is not a boolean"),
    (lambda i: i.update(metadata=["x"]), "metadata: not an object"),
    (lambda i: i.update(charged_twice=True), "charged_twice: not a field of payment_intent"),
    (lambda i: i.update(object="charge_thing"), "is not a resource the loopback serves"),
])
def test_a_wrong_answer_is_caught(an_intent, change, says):
    wrong = copy.deepcopy(an_intent)
    change(wrong)
    assert any(says in problem for problem in shapes.check_response(wrong)), shapes.check_response(wrong)


def test_a_wrong_error_or_page_is_caught():
    assert shapes.check_response({"error": {"type": "rate_limit_error", "message": "slow"}})
    assert shapes.check_response({"error": {"type": "card_error"}}) == ["error.message: missing"]
    assert shapes.check_response({"object": "search_result", "data": [], "has_more": False, "url": "/"}) == \
           ["next_page: missing"]


@pytest.mark.parametrize("params, says", [
    ({"currency": "usd"}, "amount: required, missing"),
    ({"amount": "12.5", "currency": "usd"}, "amount: '12.5' is not an integer"),
    ({"amount": "1", "currency": "usd", "off_session": "maybe"}, "off_session: 'maybe' fits none of"),
    ({"amount": "1", "currency": "usd", "idem_stack": "S"}, "idem_stack: not a parameter"),
    ({"amount": "1", "currency": "usd", "capture_method": "later"}, "capture_method: 'later' fits none of"),
])
def test_a_wrong_request_is_caught(params, says):
    problems = shapes.check_request("POST /v1/payment_intents", params)
    assert any(says in p for p in problems), problems


def test_the_vendored_fields_name_their_source():
    vendored = json.loads((Path(shapes.__file__).with_name("openapi_fields.json")).read_text())
    assert "stripe/openapi" in vendored["source"] and "f6c2a48fbac2819d1feba8143d942ffc65e1c0d2" in vendored["source"]
    assert set(vendored["resources"]) == set(shapes.RESOURCES)
    assert stripe.VERSION.startswith("16.")  # the generated types these checks read
